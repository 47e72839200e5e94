-- iwarp-sctp.lua — a Wireshark dissector for iWARP over SCTP: the DDP
-- adaptation of RFC 5043 (SCTP Payload Protocol Identifiers 16 and 17),
-- the DDP headers of RFC 5041, the RDMAP messages of RFC 5040 and the
-- RFC 7306 extensions (Atomic Operations, Immediate Data), with the
-- enhanced session control codes and IRD/ORD word of RFC 6581.
--
-- Load it for one run:   tshark -X lua_script:wireshark/iwarp-sctp.lua -r FILE
-- Install it for good:   cp wireshark/iwarp-sctp.lua ~/.local/lib/wireshark/plugins/
-- (docs/wireshark.md describes the fields and shows a decode.)
--
-- Three protocols, so that each layer has its own display filter:
--   iwarp_sctp  the RFC 5043 chunk: DDP-SSN, session control, IRD/ORD word
--   ddpsctp     the RFC 5041 DDP header carried in a DDP Segment Chunk
--               (not "ddp": that is AppleTalk's Datagram Delivery Protocol;
--               not "iwarp_ddp": that is Wireshark's built-in MPA/TCP one)
--   rdmap       the RFC 5040 / RFC 7306 RDMAP message
--
-- A malformed chunk is shown with an expert info; the dissector checks
-- every length before it reads, so no input raises a Lua error.

local PPID_SEGMENT = 16 -- DDP Segment Chunk (RFC 5043 §5.2)
local PPID_CONTROL = 17 -- DDP Stream Session Control (RFC 5043 §5.2)

-- Bit operations in plain arithmetic: Wireshark embeds Lua 5.1 to 5.4
-- depending on the release (bit32 exists only in 5.2), and every field
-- handled here fits 32 bits.
local function band(a, b)
    local r, v = 0, 1
    while a > 0 and b > 0 do
        if a % 2 == 1 and b % 2 == 1 then
            r = r + v
        end
        a, b, v = math.floor(a / 2), math.floor(b / 2), v * 2
    end
    return r
end

local function rshift(a, n)
    return math.floor(a / 2 ^ n)
end

local p_sctp = Proto("iwarp_sctp", "iWARP DDP over SCTP (RFC 5043)")
local p_ddp = Proto("ddpsctp", "Direct Data Placement over SCTP (RFC 5041)")
local p_rdmap = Proto("rdmap", "RDMA Protocol (RFC 5040, RFC 7306)")

---------------------------------------------------------------------------
-- Value names
---------------------------------------------------------------------------

local ppid_names = {
    [PPID_SEGMENT] = "DDP Segment Chunk",
    [PPID_CONTROL] = "DDP Stream Session Control",
}

-- RFC 5043 §5.2.3 and RFC 6581 §7.
local function_names = {
    [0x001] = "DDP Stream Session Initiate",
    [0x002] = "DDP Stream Session Accept",
    [0x003] = "DDP Stream Session Reject",
    [0x004] = "DDP Stream Session Terminate",
    [0x005] = "Enhanced DDP Stream Session Initiate",
    [0x006] = "Enhanced DDP Stream Session Accept",
    [0x007] = "Enhanced DDP Stream Session Reject",
}

-- RFC 5040 §4.1 Figure 4 and RFC 7306 §4 Figure 2.
local opcode_names = {
    [0x0] = "RDMA Write",
    [0x1] = "RDMA Read Request",
    [0x2] = "RDMA Read Response",
    [0x3] = "Send",
    [0x4] = "Send with Invalidate",
    [0x5] = "Send with Solicited Event",
    [0x6] = "Send with Solicited Event and Invalidate",
    [0x7] = "Terminate",
    [0x8] = "Immediate Data",
    [0x9] = "Immediate Data with Solicited Event",
    [0xA] = "Atomic Request",
    [0xB] = "Atomic Response",
}

-- The DDP model and untagged queue of each opcode (RFC 5040 Figure 4,
-- RFC 7306 Figure 2): true for tagged, else the Queue Number.
local opcode_tagged = { [0x0] = true, [0x2] = true }
local opcode_qn = {
    [0x1] = 1, [0x3] = 0, [0x4] = 0, [0x5] = 0, [0x6] = 0, [0x7] = 2,
    [0x8] = 0, [0x9] = 0, [0xA] = 1, [0xB] = 3,
}

-- RFC 5040 §4.1, RFC 7306 §10.2.
local qn_names = {
    [0] = "Send queue",
    [1] = "RDMA Read Request queue",
    [2] = "Terminate queue",
    [3] = "Atomic Response queue",
}

-- RFC 7306 §5.2.1 Figure 5 and §10.1.
local aopcode_names = {
    [0x0] = "FetchAdd",
    [0x1] = "Reserved",
    [0x2] = "CmpSwap",
}

-- RFC 5040 §4.8 Figure 9.
local layer_names = { [0x0] = "RDMA", [0x1] = "DDP", [0x2] = "LLP" }

-- Error types per layer: RDMA (RFC 5040 Figure 9), DDP (RFC 5041 §7.2),
-- LLP (RFC 6581 §8: type 0 is MPA; RFC 5043 defines none for SCTP).
local etype_names = {
    [0x0] = {
        [0x0] = "Local Catastrophic Error",
        [0x1] = "Remote Protection Error",
        [0x2] = "Remote Operation Error",
    },
    [0x1] = {
        [0x0] = "Local Catastrophic",
        [0x1] = "Tagged Buffer Error",
        [0x2] = "Untagged Buffer Error",
        [0x3] = "Reserved for the use by the LLP",
    },
    [0x2] = {
        [0x0] = "MPA",
    },
}

-- Error codes per layer and type.
local code_names = {
    [0x0] = {
        [0x1] = {
            [0x00] = "Invalid STag",
            [0x01] = "Base or bounds violation",
            [0x02] = "Access rights violation",
            [0x03] = "STag not associated with RDMAP Stream",
            [0x04] = "TO wrap",
            [0x09] = "STag cannot be Invalidated",
            [0xFF] = "Unspecified Error",
        },
        [0x2] = {
            [0x05] = "Invalid RDMAP version",
            [0x06] = "Unexpected OpCode",
            [0x07] = "Catastrophic error, localized to RDMAP Stream",
            [0x08] = "Catastrophic error, global",
            [0x09] = "STag cannot be Invalidated",
            [0xFF] = "Unspecified Error",
        },
    },
    [0x1] = {
        [0x0] = { [0x00] = "Local Catastrophic" },
        [0x1] = {
            [0x00] = "Invalid STag",
            [0x01] = "Base or bounds violation",
            [0x02] = "STag not associated with DDP Stream",
            [0x03] = "TO wrap",
            [0x04] = "Invalid DDP version",
        },
        [0x2] = {
            [0x01] = "Invalid QN",
            [0x02] = "Invalid MSN - no buffer available",
            [0x03] = "Invalid MSN - MSN range is not valid",
            [0x04] = "Invalid MO",
            [0x05] = "DDP Message too long for available buffer",
            [0x06] = "Invalid DDP version",
        },
    },
    [0x2] = {
        [0x0] = {
            -- RFC 5044 §8
            [0x01] = "TCP connection closed, terminated, or lost",
            [0x02] = "Received MPA CRC does not match the calculated value",
            [0x03] = "MPA Marker and ULPDU Length fields do not agree",
            [0x04] = "Invalid MPA Request Frame or MPA Response Frame",
            -- RFC 6581 §8
            [0x05] = "Local catastrophic",
            [0x06] = "Insufficient IRD resources",
            [0x07] = "No matching RTR option",
        },
    },
}

-- term_code_name returns the names of a Terminate's layer, error type and
-- error code (RFC 5040 §4.8 Figure 9), and whether the triple is defined.
local function term_code_name(layer, etype, code)
    local ln = layer_names[layer]
    if not ln then
        return "Unknown layer", "Unknown error type", "Unknown error code", false
    end
    local en = etype_names[layer][etype]
    if not en then
        return ln, "Unknown error type", "Unknown error code", false
    end
    if layer == 0x0 and etype == 0x0 then
        -- "This error type does not have an error code. Any value in this
        -- field is acceptable."
        return ln, en, "None", true
    end
    if layer == 0x1 and etype == 0x3 then
        return ln, en, "Reserved for the use by the LLP", true
    end
    local cn = code_names[layer][etype] and code_names[layer][etype][code]
    if not cn then
        return ln, en, "Unknown error code", false
    end
    return ln, en, cn, true
end

---------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------

local F = {}

-- iwarp_sctp: RFC 5043 §5.2
F.ssn = ProtoField.uint16("iwarp_sctp.ssn", "DDP-SSN", base.DEC, nil, nil,
    "DDP Source Sequence Number (RFC 5043 §5.2.1)")
F.stream = ProtoField.uint16("iwarp_sctp.stream", "DDP Stream (SCTP stream identifier)", base.DEC)
F.ppid = ProtoField.uint32("iwarp_sctp.ppid", "Chunk type (PPID)", base.DEC, ppid_names)
F.function_code = ProtoField.uint16("iwarp_sctp.function", "Function Code", base.HEX, function_names,
    nil, "DDP Stream Session Control function code (RFC 5043 §5.2.3, RFC 6581 §7)")
F.pdata_len = ProtoField.uint16("iwarp_sctp.pdata_len", "Private Data length", base.DEC, nil, nil,
    "Octets of private data, the IRD/ORD word included (the rest of the chunk: RFC 5043 has no length field)")
F.irdord = ProtoField.bytes("iwarp_sctp.irdord", "Enhanced RDMA connection establishment data")
F.flag_a = ProtoField.bool("iwarp_sctp.flag_a", "A: Peer-to-peer connection model", 16, nil, 0x8000)
F.flag_b = ProtoField.bool("iwarp_sctp.flag_b", "B: zero-length Send RTR", 16, nil, 0x4000)
F.ird = ProtoField.uint16("iwarp_sctp.ird", "IRD", base.DEC, nil, 0x3FFF,
    "Inbound RDMA Read queue depth (RFC 6581 §9.1)")
F.flag_c = ProtoField.bool("iwarp_sctp.flag_c", "C: zero-length RDMA Write RTR", 16, nil, 0x8000)
F.flag_d = ProtoField.bool("iwarp_sctp.flag_d", "D: zero-length RDMA Read RTR", 16, nil, 0x4000)
F.ord = ProtoField.uint16("iwarp_sctp.ord", "ORD", base.DEC, nil, 0x3FFF,
    "Outbound RDMA Read queue depth (RFC 6581 §9.1)")
F.pdata = ProtoField.bytes("iwarp_sctp.pdata", "Private Data", base.NONE, "ULP private data")

-- ddpsctp: RFC 5041 §4
F.ddp_control = ProtoField.uint8("ddpsctp.control", "DDP Control Field", base.HEX)
F.ddp_t = ProtoField.bool("ddpsctp.t", "T: Tagged", 8, nil, 0x80)
F.ddp_l = ProtoField.bool("ddpsctp.l", "L: Last", 8, nil, 0x40)
F.ddp_rsvd = ProtoField.uint8("ddpsctp.rsvd", "Reserved", base.HEX, nil, 0x3C)
F.ddp_dv = ProtoField.uint8("ddpsctp.dv", "DV: DDP Version", base.DEC, nil, 0x03)
F.ddp_rsvdulp = ProtoField.bytes("ddpsctp.rsvdulp", "RsvdULP")
F.ddp_stag = ProtoField.uint32("ddpsctp.stag", "STag", base.HEX)
F.ddp_to = ProtoField.uint64("ddpsctp.to", "TO: Tagged Offset", base.DEC)
F.ddp_qn = ProtoField.uint32("ddpsctp.qn", "QN: Queue Number", base.DEC, qn_names)
F.ddp_msn = ProtoField.uint32("ddpsctp.msn", "MSN: Message Sequence Number", base.DEC)
F.ddp_mo = ProtoField.uint32("ddpsctp.mo", "MO: Message Offset", base.DEC)
F.ddp_len = ProtoField.uint32("ddpsctp.payload_len", "ULP payload length", base.DEC)

-- rdmap: RFC 5040 §4, RFC 7306 §5, §6
F.r_control = ProtoField.uint8("rdmap.control", "RDMAP Control Field", base.HEX)
F.r_rv = ProtoField.uint8("rdmap.rv", "RV: RDMA Version", base.DEC, nil, 0xC0)
F.r_rsv = ProtoField.uint8("rdmap.rsv", "Reserved", base.HEX, nil, 0x30)
F.r_opcode = ProtoField.uint8("rdmap.opcode", "OpCode", base.HEX, opcode_names, 0x0F)
F.r_inval = ProtoField.uint32("rdmap.inval_stag", "Invalidate STag", base.HEX)
F.r_data = ProtoField.bytes("rdmap.data", "ULP payload")

F.rr_sinkstag = ProtoField.uint32("rdmap.read.sink_stag", "Data Sink STag", base.HEX)
F.rr_sinkto = ProtoField.uint64("rdmap.read.sink_to", "Data Sink Tagged Offset", base.DEC)
F.rr_size = ProtoField.uint32("rdmap.read.size", "RDMA Read Message Size", base.DEC)
F.rr_srcstag = ProtoField.uint32("rdmap.read.src_stag", "Data Source STag", base.HEX)
F.rr_srcto = ProtoField.uint64("rdmap.read.src_to", "Data Source Tagged Offset", base.DEC)

F.t_layer = ProtoField.uint8("rdmap.term.layer", "Layer", base.HEX, layer_names, 0xF0)
F.t_etype = ProtoField.uint8("rdmap.term.etype", "Error Type", base.HEX, nil, 0x0F)
F.t_code = ProtoField.uint8("rdmap.term.code", "Error Code", base.HEX)
F.t_name = ProtoField.string("rdmap.term.name", "Terminate cause")
F.t_m = ProtoField.bool("rdmap.term.m", "M: DDP Segment Length valid", 8, nil, 0x80)
F.t_d = ProtoField.bool("rdmap.term.d", "D: DDP Header Included", 8, nil, 0x40)
F.t_r = ProtoField.bool("rdmap.term.r", "R: RDMAP Header Included", 8, nil, 0x20)
F.t_rsvd = ProtoField.uint16("rdmap.term.reserved", "Reserved", base.HEX, nil, 0x1FFF)
F.t_seglen = ProtoField.uint16("rdmap.term.seg_len", "DDP Segment Length", base.DEC)
F.t_ddp = ProtoField.bytes("rdmap.term.ddp", "Terminated DDP Header")
F.t_ddp_t = ProtoField.bool("rdmap.term.ddp.t", "T: Tagged", 8, nil, 0x80)
F.t_ddp_l = ProtoField.bool("rdmap.term.ddp.l", "L: Last", 8, nil, 0x40)
F.t_ddp_opcode = ProtoField.uint8("rdmap.term.ddp.opcode", "Terminated OpCode", base.HEX, opcode_names, 0x0F)
F.t_ddp_stag = ProtoField.uint32("rdmap.term.ddp.stag", "STag", base.HEX)
F.t_ddp_to = ProtoField.uint64("rdmap.term.ddp.to", "TO", base.DEC)
F.t_ddp_qn = ProtoField.uint32("rdmap.term.ddp.qn", "QN", base.DEC, qn_names)
F.t_ddp_msn = ProtoField.uint32("rdmap.term.ddp.msn", "MSN", base.DEC)
F.t_ddp_mo = ProtoField.uint32("rdmap.term.ddp.mo", "MO", base.DEC)
F.t_rdma = ProtoField.bytes("rdmap.term.rdma", "Terminated RDMA Header")
F.t_rr_sinkstag = ProtoField.uint32("rdmap.term.read.sink_stag", "Data Sink STag", base.HEX)
F.t_rr_sinkto = ProtoField.uint64("rdmap.term.read.sink_to", "Data Sink Tagged Offset", base.DEC)
F.t_rr_size = ProtoField.uint32("rdmap.term.read.size", "RDMA Read Message Size", base.DEC)
F.t_rr_srcstag = ProtoField.uint32("rdmap.term.read.src_stag", "Data Source STag", base.HEX)
F.t_rr_srcto = ProtoField.uint64("rdmap.term.read.src_to", "Data Source Tagged Offset", base.DEC)

F.a_reserved = ProtoField.uint32("rdmap.atomic.reserved", "Reserved", base.HEX, nil, 0xFFFFFFF0)
F.a_opcode = ProtoField.uint32("rdmap.atomic.opcode", "AOpCode", base.HEX, aopcode_names, 0x0000000F)
F.a_reqid = ProtoField.uint32("rdmap.atomic.req_id", "Request Identifier", base.HEX)
F.a_stag = ProtoField.uint32("rdmap.atomic.stag", "Remote STag", base.HEX)
F.a_to = ProtoField.uint64("rdmap.atomic.to", "Remote Tagged Offset", base.DEC)
F.a_add = ProtoField.uint64("rdmap.atomic.add_data", "Add Data", base.HEX)
F.a_addmask = ProtoField.uint64("rdmap.atomic.add_mask", "Add Mask", base.HEX)
F.a_swap = ProtoField.uint64("rdmap.atomic.swap_data", "Swap Data", base.HEX)
F.a_swapmask = ProtoField.uint64("rdmap.atomic.swap_mask", "Swap Mask", base.HEX)
F.a_cmp = ProtoField.uint64("rdmap.atomic.compare_data", "Compare Data", base.HEX)
F.a_cmpmask = ProtoField.uint64("rdmap.atomic.compare_mask", "Compare Mask", base.HEX)
F.a_origid = ProtoField.uint32("rdmap.atomic.orig_req_id", "Original Request Identifier", base.HEX)
F.a_orig = ProtoField.uint64("rdmap.atomic.orig_value", "Original Remote Data Value", base.HEX)

F.imm = ProtoField.uint64("rdmap.immediate", "Immediate Data", base.HEX)

p_sctp.fields = {
    F.ssn, F.stream, F.ppid, F.function_code, F.pdata_len, F.irdord,
    F.flag_a, F.flag_b, F.ird, F.flag_c, F.flag_d, F.ord, F.pdata,
}
p_ddp.fields = {
    F.ddp_control, F.ddp_t, F.ddp_l, F.ddp_rsvd, F.ddp_dv, F.ddp_rsvdulp,
    F.ddp_stag, F.ddp_to, F.ddp_qn, F.ddp_msn, F.ddp_mo, F.ddp_len,
}
p_rdmap.fields = {
    F.r_control, F.r_rv, F.r_rsv, F.r_opcode, F.r_inval, F.r_data,
    F.rr_sinkstag, F.rr_sinkto, F.rr_size, F.rr_srcstag, F.rr_srcto,
    F.t_layer, F.t_etype, F.t_code, F.t_name, F.t_m, F.t_d, F.t_r, F.t_rsvd,
    F.t_seglen, F.t_ddp, F.t_ddp_t, F.t_ddp_l, F.t_ddp_opcode, F.t_ddp_stag,
    F.t_ddp_to, F.t_ddp_qn, F.t_ddp_msn, F.t_ddp_mo, F.t_rdma,
    F.t_rr_sinkstag, F.t_rr_sinkto, F.t_rr_size, F.t_rr_srcstag, F.t_rr_srcto,
    F.a_reserved, F.a_opcode, F.a_reqid, F.a_stag, F.a_to, F.a_add, F.a_addmask,
    F.a_swap, F.a_swapmask, F.a_cmp, F.a_cmpmask, F.a_origid, F.a_orig,
    F.imm,
}

---------------------------------------------------------------------------
-- Expert infos
---------------------------------------------------------------------------

local E = {}
local ERROR, WARN, NOTE, CHAT = expert.severity.ERROR, expert.severity.WARN, expert.severity.NOTE,
    expert.severity.CHAT
local MALFORMED, PROTOCOL, SEQUENCE, RESPONSE =
    expert.group.MALFORMED, expert.group.PROTOCOL, expert.group.SEQUENCE, expert.group.RESPONSE_CODE

E.truncated = ProtoExpert.new("iwarp_sctp.truncated", "Chunk too short", MALFORMED, ERROR)
E.unknown_ppid = ProtoExpert.new("iwarp_sctp.unknown_ppid", "Not an RFC 5043 PPID", PROTOCOL, ERROR)
E.unknown_function = ProtoExpert.new("iwarp_sctp.unknown_function", "Unknown function code", PROTOCOL, ERROR)
E.pdata_too_long = ProtoExpert.new("iwarp_sctp.pdata_too_long", "Private data exceeds 512 octets",
    PROTOCOL, ERROR)
E.terminate_data = ProtoExpert.new("iwarp_sctp.terminate_data",
    "Private data in a DDP Stream Session Terminate", PROTOCOL, ERROR)
E.missing_irdord = ProtoExpert.new("iwarp_sctp.missing_irdord",
    "Enhanced session control without the IRD/ORD word", MALFORMED, ERROR)
E.flags_without_a = ProtoExpert.new("iwarp_sctp.flags_without_a",
    "Flags B, C or D set while A is 0 (ignored by the receiver)", PROTOCOL, WARN)
E.session_event = ProtoExpert.new("iwarp_sctp.session", "DDP Stream Session event", SEQUENCE, CHAT)
E.reject = ProtoExpert.new("iwarp_sctp.reject", "DDP Stream Session rejected", RESPONSE, NOTE)

E.ddp_truncated = ProtoExpert.new("ddpsctp.truncated", "DDP header truncated", MALFORMED, ERROR)
E.ddp_empty = ProtoExpert.new("ddpsctp.empty", "DDP Segment Chunk without a DDP segment", MALFORMED, ERROR)
E.ddp_version = ProtoExpert.new("ddpsctp.version", "DDP version is not 1", PROTOCOL, WARN)

E.r_truncated = ProtoExpert.new("rdmap.truncated", "RDMAP header truncated", MALFORMED, ERROR)
E.r_version = ProtoExpert.new("rdmap.version", "RDMA Version is not 01b", PROTOCOL, WARN)
E.r_version0 = ProtoExpert.new("rdmap.version0", "RDMA Version 00b (RDMA Consortium)", PROTOCOL, NOTE)
E.r_reserved_opcode = ProtoExpert.new("rdmap.reserved_opcode", "Reserved RDMAP OpCode", PROTOCOL, ERROR)
E.r_model = ProtoExpert.new("rdmap.model", "OpCode does not match the DDP buffer model", PROTOCOL, ERROR)
E.r_qn = ProtoExpert.new("rdmap.qn", "Queue Number does not match the OpCode", PROTOCOL, WARN)
E.r_extra = ProtoExpert.new("rdmap.extra", "Octets after the RDMAP header", PROTOCOL, WARN)
E.r_continuation = ProtoExpert.new("rdmap.continuation",
    "Single-segment message with a non-zero Message Offset or without L", PROTOCOL, WARN)
E.r_imm_len = ProtoExpert.new("rdmap.immediate_len", "Immediate Data is not exactly 8 octets", PROTOCOL, ERROR)
E.r_aopcode = ProtoExpert.new("rdmap.atomic.bad_opcode", "Unsupported Atomic Operation Code", PROTOCOL, WARN)
E.r_align = ProtoExpert.new("rdmap.atomic.unaligned", "Remote Tagged Offset not 8-octet aligned", PROTOCOL,
    WARN)
E.t_cause = ProtoExpert.new("rdmap.term.cause", "Terminate", RESPONSE, NOTE)
E.t_unknown = ProtoExpert.new("rdmap.term.unknown", "Undefined Terminate layer, type or code", PROTOCOL, WARN)
E.t_r_without_d = ProtoExpert.new("rdmap.term.r_without_d", "R set without D", PROTOCOL, WARN)

p_sctp.experts = {
    E.truncated, E.unknown_ppid, E.unknown_function, E.pdata_too_long, E.terminate_data,
    E.missing_irdord, E.flags_without_a, E.session_event, E.reject,
}
p_ddp.experts = { E.ddp_truncated, E.ddp_empty, E.ddp_version }
p_rdmap.experts = {
    E.r_truncated, E.r_version, E.r_version0, E.r_reserved_opcode, E.r_model, E.r_qn, E.r_extra,
    E.r_continuation, E.r_imm_len, E.r_aopcode, E.r_align, E.t_cause, E.t_unknown, E.t_r_without_d,
}

---------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------

-- The SCTP dissector adds a DATA chunk's fields before it hands the
-- payload over, so the last value so far is the current chunk's.
local fx_sid = Field.new("sctp.data_sid")
local fx_ppid = Field.new("sctp.data_payload_proto_id")

local function last_value(fx)
    local all = { fx() }
    local f = all[#all]
    if f == nil then
        return nil
    end
    return f.value
end

local function hex32(v)
    return string.format("0x%08x", v)
end

-- from returns the range from off to the end of tvb, or the last octet
-- when off is at the end (an empty range cannot carry an expert info).
local function from(tvb, off)
    local len = tvb:len()
    if off < len then
        return tvb(off)
    end
    if len == 0 then
        return tvb()
    end
    return tvb(len - 1)
end

local function add_info(pinfo, text)
    -- The SCTP dissector has written "DATA (TSN=n) " for this chunk; one
    -- packet may bundle several chunks, each gets its own entry.
    pinfo.cols.info:append("iWARP " .. text .. " ")
end

---------------------------------------------------------------------------
-- RDMAP bodies
---------------------------------------------------------------------------

-- Read Request header (RFC 5040 §4.4 Figure 6), 28 octets at off.
local READ_REQUEST_LEN = 28
local function add_read_request(tree, tvb, off, fs)
    tree:add(fs[1], tvb(off, 4))
    tree:add(fs[2], tvb(off + 4, 8))
    tree:add(fs[3], tvb(off + 12, 4))
    tree:add(fs[4], tvb(off + 16, 4))
    tree:add(fs[5], tvb(off + 20, 8))
end

-- Terminate header (RFC 5040 §4.8 Figures 7 and 8). The DDP Segment
-- Length is on the wire when M or D is set, the terminated DDP header
-- (14 octets tagged, 18 untagged, by its T bit) when D, the terminated
-- RDMA header (a Read Request header) when R.
local function dissect_terminate(tvb, off, pinfo, tree, rtree)
    local len = tvb:len()
    if len - off < 4 then
        rtree:add_tvb_expert_info(E.r_truncated, from(tvb, off), "Terminate header needs 4 octets, has " .. (len - off))
        return "Terminate (truncated)"
    end
    local b0 = tvb(off, 1):uint()
    local layer, etype, code = rshift(b0, 4), band(b0, 0x0F), tvb(off + 1, 1):uint()
    local ln, en, cn, known = term_code_name(layer, etype, code)
    local ttree = rtree:add(tvb(off), "Terminate Header")
    ttree:set_text("Terminate Header: " .. ln .. ", " .. en .. ", " .. cn)
    ttree:add(F.t_layer, tvb(off, 1))
    ttree:add(F.t_etype, tvb(off, 1)):append_text(" (" .. en .. ")")
    ttree:add(F.t_code, tvb(off + 1, 1)):append_text(" (" .. cn .. ")")
    local name = ln .. " / " .. en .. " / " .. cn
    ttree:add(F.t_name, tvb(off, 2), name):set_generated()
    if known then
        ttree:add_tvb_expert_info(E.t_cause, tvb(off, 2), "Terminate: " .. name)
    else
        ttree:add_tvb_expert_info(E.t_unknown, tvb(off, 2),
            string.format("Undefined Terminate layer %d, type %d, code 0x%02x", layer, etype, code))
    end
    local b2 = tvb(off + 2, 1):uint()
    local m, d, r = band(b2, 0x80) ~= 0, band(b2, 0x40) ~= 0, band(b2, 0x20) ~= 0
    ttree:add(F.t_m, tvb(off + 2, 1))
    ttree:add(F.t_d, tvb(off + 2, 1))
    ttree:add(F.t_r, tvb(off + 2, 1))
    ttree:add(F.t_rsvd, tvb(off + 2, 2))
    local p = off + 4
    if m or d then
        if len - p < 2 then
            ttree:add_tvb_expert_info(E.r_truncated, tvb(off), "DDP Segment Length missing")
            return "Terminate " .. name
        end
        ttree:add(F.t_seglen, tvb(p, 2))
        p = p + 2
    end
    if d then
        if len - p < 1 then
            ttree:add_tvb_expert_info(E.r_truncated, tvb(off), "Terminated DDP Header missing")
            return "Terminate " .. name
        end
        local tagged = band(tvb(p, 1):uint(), 0x80) ~= 0
        local hl = tagged and 14 or 18
        if len - p < hl then
            ttree:add_tvb_expert_info(E.r_truncated, tvb(p),
                string.format("Terminated DDP Header needs %d octets, has %d", hl, len - p))
            return "Terminate " .. name
        end
        local dtree = ttree:add(F.t_ddp, tvb(p, hl))
        dtree:add(F.t_ddp_t, tvb(p, 1))
        dtree:add(F.t_ddp_l, tvb(p, 1))
        dtree:add(F.t_ddp_opcode, tvb(p + 1, 1))
        if tagged then
            dtree:add(F.t_ddp_stag, tvb(p + 2, 4))
            dtree:add(F.t_ddp_to, tvb(p + 6, 8))
        else
            dtree:add(F.t_ddp_qn, tvb(p + 6, 4))
            dtree:add(F.t_ddp_msn, tvb(p + 10, 4))
            dtree:add(F.t_ddp_mo, tvb(p + 14, 4))
        end
        p = p + hl
    end
    if r then
        if not d then
            ttree:add_tvb_expert_info(E.t_r_without_d, tvb(off + 2, 1),
                "R is set without D: the RDMA header is read right after the control field")
        end
        if len - p < READ_REQUEST_LEN then
            ttree:add_tvb_expert_info(E.r_truncated, from(tvb, p),
                string.format("Terminated RDMA Header needs %d octets, has %d", READ_REQUEST_LEN, len - p))
            return "Terminate " .. name
        end
        local rt = ttree:add(F.t_rdma, tvb(p, READ_REQUEST_LEN))
        add_read_request(rt, tvb, p,
            { F.t_rr_sinkstag, F.t_rr_sinkto, F.t_rr_size, F.t_rr_srcstag, F.t_rr_srcto })
        p = p + READ_REQUEST_LEN
    end
    if p < len then
        rtree:add_tvb_expert_info(E.r_extra, tvb(p), (len - p) .. " octets after the Terminate header")
    end
    return "Terminate " .. name
end

-- Atomic Request header (RFC 7306 §5.2.1 Figure 4), 52 octets.
local ATOMIC_REQUEST_LEN = 52
local function dissect_atomic_request(tvb, off, rtree)
    local len = tvb:len()
    if len - off < ATOMIC_REQUEST_LEN then
        rtree:add_tvb_expert_info(E.r_truncated, from(tvb, off),
            string.format("Atomic Request header needs %d octets, has %d", ATOMIC_REQUEST_LEN, len - off))
        return "Atomic Request (truncated)"
    end
    local aop = band(tvb(off + 3, 1):uint(), 0x0F)
    local an = aopcode_names[aop] or "Unassigned"
    local at = rtree:add(tvb(off, ATOMIC_REQUEST_LEN), "Atomic Request Header: " .. an)
    at:add(F.a_reserved, tvb(off, 4))
    at:add(F.a_opcode, tvb(off, 4))
    at:add(F.a_reqid, tvb(off + 4, 4))
    at:add(F.a_stag, tvb(off + 8, 4))
    local ti = at:add(F.a_to, tvb(off + 12, 8))
    if band(tvb(off + 19, 1):uint(), 0x07) ~= 0 then
        ti:add_tvb_expert_info(E.r_align, tvb(off + 12, 8))
    end
    if aop == 0x2 then
        at:add(F.a_swap, tvb(off + 20, 8))
        at:add(F.a_swapmask, tvb(off + 28, 8))
        at:add(F.a_cmp, tvb(off + 36, 8))
        at:add(F.a_cmpmask, tvb(off + 44, 8))
    else
        if aop ~= 0x0 then
            at:add_tvb_expert_info(E.r_aopcode, tvb(off, 4),
                string.format("Atomic Operation Code 0x%x is not FetchAdd or CmpSwap (RFC 7306 §5.2.1)", aop))
        end
        at:add(F.a_add, tvb(off + 20, 8))
        at:add(F.a_addmask, tvb(off + 28, 8))
        at:add(F.a_cmp, tvb(off + 36, 8)):append_text(" (not used by " .. an .. ")")
        at:add(F.a_cmpmask, tvb(off + 44, 8)):append_text(" (not used by " .. an .. ")")
    end
    if len > off + ATOMIC_REQUEST_LEN then
        rtree:add_tvb_expert_info(E.r_extra, tvb(off + ATOMIC_REQUEST_LEN),
            (len - off - ATOMIC_REQUEST_LEN) .. " octets after the Atomic Request header")
    end
    return string.format("Atomic Request %s ReqID=0x%08x STag=%s TO=%s", an, tvb(off + 4, 4):uint(),
        hex32(tvb(off + 8, 4):uint()), tostring(tvb(off + 12, 8):uint64()))
end

-- Atomic Response header (RFC 7306 §5.2.2 Figure 6), 12 octets.
local ATOMIC_RESPONSE_LEN = 12
local function dissect_atomic_response(tvb, off, rtree)
    local len = tvb:len()
    if len - off < ATOMIC_RESPONSE_LEN then
        rtree:add_tvb_expert_info(E.r_truncated, from(tvb, off),
            string.format("Atomic Response header needs %d octets, has %d", ATOMIC_RESPONSE_LEN, len - off))
        return "Atomic Response (truncated)"
    end
    local at = rtree:add(tvb(off, ATOMIC_RESPONSE_LEN), "Atomic Response Header")
    at:add(F.a_origid, tvb(off, 4))
    at:add(F.a_orig, tvb(off + 4, 8))
    if len > off + ATOMIC_RESPONSE_LEN then
        rtree:add_tvb_expert_info(E.r_extra, tvb(off + ATOMIC_RESPONSE_LEN),
            (len - off - ATOMIC_RESPONSE_LEN) .. " octets after the Atomic Response header")
    end
    return string.format("Atomic Response ReqID=0x%08x", tvb(off, 4):uint())
end

-- dissect_rdmap decodes the RDMAP message of one DDP segment: ctl is the
-- offset of the RDMAP Control Field (the first RsvdULP octet), off the
-- start of the ULP payload. hdr describes the DDP header.
local function dissect_rdmap(tvb, ctl, off, pinfo, tree, hdr)
    local len = tvb:len()
    local rtree = tree:add(p_rdmap, tvb(ctl))
    local c = tvb(ctl, 1):uint()
    local rv, op = rshift(c, 6), band(c, 0x0F)
    local ctree = rtree:add(F.r_control, tvb(ctl, 1))
    local rvi = ctree:add(F.r_rv, tvb(ctl, 1))
    ctree:add(F.r_rsv, tvb(ctl, 1))
    ctree:add(F.r_opcode, tvb(ctl, 1))
    if rv == 0 then
        rvi:add_tvb_expert_info(E.r_version0, tvb(ctl, 1))
    elseif rv ~= 1 then
        rvi:add_tvb_expert_info(E.r_version, tvb(ctl, 1), "RDMA Version " .. rv .. " (RFC 5040 §4.1: 01b)")
    end
    local name = opcode_names[op]
    if name == nil then
        rtree:add_tvb_expert_info(E.r_reserved_opcode, tvb(ctl, 1),
            string.format("Reserved RDMAP OpCode 0x%x (RFC 5040 §4.1 Figure 4)", op))
        rtree:set_text(string.format("RDMA Protocol, reserved OpCode 0x%x", op))
        if off < len then
            rtree:add(F.r_data, tvb(off))
        end
        return string.format("RDMAP reserved OpCode 0x%x", op)
    end
    rtree:set_text("RDMA Protocol, " .. name)
    pinfo.cols.protocol = "RDMAP"

    -- Figure 4: the buffer model and queue of each opcode.
    if (opcode_tagged[op] == true) ~= hdr.tagged then
        rtree:add_tvb_expert_info(E.r_model, tvb(ctl, 1),
            string.format("%s sent %s", name, hdr.tagged and "tagged" or "untagged"))
    elseif not hdr.tagged and opcode_qn[op] ~= hdr.qn then
        rtree:add_tvb_expert_info(E.r_qn, tvb(ctl, 1),
            string.format("%s on QN %d, RFC 5040/7306 say QN %d", name, hdr.qn, opcode_qn[op]))
    end

    local plen = len - off
    if hdr.tagged then
        if plen > 0 then
            rtree:add(F.r_data, tvb(off))
        end
        return string.format("%s STag=%s TO=%s len=%d%s", name, hex32(hdr.stag), tostring(hdr.to), plen,
            hdr.last and "" or " (more)")
    end

    local desc = string.format("%s QN=%d MSN=%d MO=%d len=%d%s", name, hdr.qn, hdr.msn, hdr.mo, plen,
        hdr.last and "" or " (more)")
    -- Messages that are one segment by definition.
    local single = op == 0x1 or op == 0x7 or op == 0x8 or op == 0x9 or op == 0xA or op == 0xB
    if single and (hdr.mo ~= 0 or not hdr.last) then
        rtree:add_tvb_expert_info(E.r_continuation, tvb(ctl, 1),
            string.format("%s with MO %d, L %s", name, hdr.mo, tostring(hdr.last)))
        if plen > 0 then
            rtree:add(F.r_data, tvb(off))
        end
        return desc
    end
    if op == 0x4 or op == 0x6 then
        rtree:add(F.r_inval, tvb(ctl + 1, 4))
        desc = desc .. " Invalidate=" .. hex32(tvb(ctl + 1, 4):uint())
    end
    if op == 0x1 then
        if plen < READ_REQUEST_LEN then
            rtree:add_tvb_expert_info(E.r_truncated, tvb(ctl),
                string.format("Read Request header needs %d octets, has %d", READ_REQUEST_LEN, plen))
            return desc
        end
        local rt = rtree:add(tvb(off, READ_REQUEST_LEN), "RDMA Read Request Header")
        add_read_request(rt, tvb, off, { F.rr_sinkstag, F.rr_sinkto, F.rr_size, F.rr_srcstag, F.rr_srcto })
        if plen > READ_REQUEST_LEN then
            rtree:add_tvb_expert_info(E.r_extra, tvb(off + READ_REQUEST_LEN),
                (plen - READ_REQUEST_LEN) .. " octets after the Read Request header")
        end
        return string.format("RDMA Read Request Sink=%s@%s Size=%d Src=%s@%s", hex32(tvb(off, 4):uint()),
            tostring(tvb(off + 4, 8):uint64()), tvb(off + 12, 4):uint(), hex32(tvb(off + 16, 4):uint()),
            tostring(tvb(off + 20, 8):uint64()))
    elseif op == 0x7 then
        return dissect_terminate(tvb, off, pinfo, tree, rtree)
    elseif op == 0x8 or op == 0x9 then
        if plen ~= 8 then
            rtree:add_tvb_expert_info(E.r_imm_len, tvb(ctl),
                "Immediate Data of " .. plen .. " octets (RFC 7306 §6.3: exactly 8)")
            if plen > 0 then
                rtree:add(F.r_data, tvb(off))
            end
            return desc
        end
        rtree:add(F.imm, tvb(off, 8))
        return name .. " 0x" .. tvb(off, 8):uint64():tohex()
    elseif op == 0xA then
        return dissect_atomic_request(tvb, off, rtree)
    elseif op == 0xB then
        return dissect_atomic_response(tvb, off, rtree)
    end
    if plen > 0 then
        rtree:add(F.r_data, tvb(off))
    end
    return desc
end

---------------------------------------------------------------------------
-- DDP segment (RFC 5041 §4) in a DDP Segment Chunk
---------------------------------------------------------------------------

local TAGGED_LEN, UNTAGGED_LEN = 14, 18

local function dissect_ddp(tvb, off, pinfo, tree)
    local len = tvb:len()
    if len - off < 1 then
        tree:add_tvb_expert_info(E.ddp_empty, tvb(0), "DDP Segment Chunk carries no DDP segment")
        return "DDP segment missing"
    end
    local c = tvb(off, 1):uint()
    local tagged = band(c, 0x80) ~= 0
    local hl = tagged and TAGGED_LEN or UNTAGGED_LEN
    local dtree = tree:add(p_ddp, tvb(off))
    local ctree = dtree:add(F.ddp_control, tvb(off, 1))
    ctree:add(F.ddp_t, tvb(off, 1))
    ctree:add(F.ddp_l, tvb(off, 1))
    ctree:add(F.ddp_rsvd, tvb(off, 1))
    local dvi = ctree:add(F.ddp_dv, tvb(off, 1))
    if band(c, 0x03) ~= 1 then
        dvi:add_tvb_expert_info(E.ddp_version, tvb(off, 1), "DDP version " .. band(c, 0x03) .. " (RFC 5041 §4.1: 1)")
    end
    if len - off < hl then
        dtree:add_tvb_expert_info(E.ddp_truncated, tvb(off),
            string.format("%s DDP header needs %d octets, has %d", tagged and "Tagged" or "Untagged", hl,
                len - off))
        dtree:set_text("Direct Data Placement over SCTP, truncated header")
        return "DDP header truncated"
    end
    local hdr = { tagged = tagged, last = band(c, 0x40) ~= 0 }
    if tagged then
        dtree:add(F.ddp_rsvdulp, tvb(off + 1, 1))
        dtree:add(F.ddp_stag, tvb(off + 2, 4))
        dtree:add(F.ddp_to, tvb(off + 6, 8))
        hdr.stag = tvb(off + 2, 4):uint()
        hdr.to = tvb(off + 6, 8):uint64()
        dtree:set_text(string.format("Direct Data Placement over SCTP, Tagged, STag %s, TO %s%s",
            hex32(hdr.stag), tostring(hdr.to), hdr.last and ", Last" or ""))
    else
        dtree:add(F.ddp_rsvdulp, tvb(off + 1, 5))
        dtree:add(F.ddp_qn, tvb(off + 6, 4))
        dtree:add(F.ddp_msn, tvb(off + 10, 4))
        dtree:add(F.ddp_mo, tvb(off + 14, 4))
        hdr.qn = tvb(off + 6, 4):uint()
        hdr.msn = tvb(off + 10, 4):uint()
        hdr.mo = tvb(off + 14, 4):uint()
        dtree:set_text(string.format("Direct Data Placement over SCTP, Untagged, QN %d, MSN %d, MO %d%s",
            hdr.qn, hdr.msn, hdr.mo, hdr.last and ", Last" or ""))
    end
    dtree:add(F.ddp_len, len - off - hl):set_generated()
    dtree:set_len(hl)
    return dissect_rdmap(tvb, off + 1, off + hl, pinfo, tree, hdr)
end

---------------------------------------------------------------------------
-- DDP Stream Session Control (RFC 5043 §5.2.3, RFC 6581 §7, §9)
---------------------------------------------------------------------------

local MAX_PRIVATE_DATA = 512

local function dissect_control(tvb, off, pinfo, stree)
    local len = tvb:len()
    if len - off < 2 then
        stree:add_tvb_expert_info(E.truncated, tvb(0), "Session control without a Function Code")
        return "Session control (truncated)"
    end
    local fc = tvb(off, 2):uint()
    local fi = stree:add(F.function_code, tvb(off, 2))
    local name = function_names[fc]
    local pd = off + 2
    local pdl = len - pd
    stree:add(F.pdata_len, pdl):set_generated()
    if name == nil then
        fi:add_tvb_expert_info(E.unknown_function, tvb(off, 2),
            string.format("Function code 0x%03x is not defined by RFC 5043 or RFC 6581", fc))
        if pdl > 0 then
            stree:add(F.pdata, tvb(pd))
        end
        return string.format("Session control, unknown function 0x%03x", fc)
    end
    if pdl > MAX_PRIVATE_DATA then
        stree:add_tvb_expert_info(E.pdata_too_long, tvb(pd),
            "Private data of " .. pdl .. " octets (RFC 5043 §5.2.3: at most 512)")
    end
    if fc == 0x004 then
        stree:add_tvb_expert_info(E.session_event, tvb(off, 2), name)
        if pdl > 0 then
            stree:add_tvb_expert_info(E.terminate_data, tvb(pd),
                pdl .. " octets of private data (RFC 5043 §5.2.3: none)")
            stree:add(F.pdata, tvb(pd))
        end
        return name
    end
    local desc = name
    if fc >= 0x005 then
        -- The IRD/ORD word begins the private data of the enhanced codes
        -- (RFC 6581 §7, §9). §7 requires it in the Enhanced Initiate and
        -- Accept; an Enhanced Reject that carries 4 octets or more is read
        -- the same way (the SCTP form of MPA's rejecting enhanced Reply).
        if pdl < 4 then
            if fc ~= 0x007 then
                stree:add_tvb_expert_info(E.missing_irdord, tvb(off, 2),
                    name .. " with " .. pdl .. " octets of private data: the IRD/ORD word needs 4")
            end
        else
            local wt = stree:add(F.irdord, tvb(pd, 4))
            wt:add(F.flag_a, tvb(pd, 2))
            wt:add(F.flag_b, tvb(pd, 2))
            local hi, lo = tvb(pd, 2):uint(), tvb(pd + 2, 2):uint()
            local ii = wt:add(F.ird, tvb(pd, 2))
            if band(hi, 0x3FFF) == 0x3FFF then
                ii:append_text(" (no negotiation)")
            end
            wt:add(F.flag_c, tvb(pd + 2, 2))
            wt:add(F.flag_d, tvb(pd + 2, 2))
            local oi = wt:add(F.ord, tvb(pd + 2, 2))
            if band(lo, 0x3FFF) == 0x3FFF then
                oi:append_text(" (no negotiation)")
            end
            local a = band(hi, 0x8000) ~= 0
            wt:set_text(string.format("IRD/ORD: A=%d IRD=%d ORD=%d", a and 1 or 0, band(hi, 0x3FFF),
                band(lo, 0x3FFF)))
            if not a and (band(hi, 0x4000) ~= 0 or band(lo, 0xC000) ~= 0) then
                -- RFC 6581 §9.2: with A = 0, B, C and D MUST be 0 and are
                -- ignored on reception.
                wt:add_tvb_expert_info(E.flags_without_a, tvb(pd, 4))
            end
            desc = string.format("%s IRD=%d ORD=%d", name, band(hi, 0x3FFF), band(lo, 0x3FFF))
            pd = pd + 4
        end
    end
    if pd < len then
        stree:add(F.pdata, tvb(pd))
    end
    desc = desc .. string.format(" private data %d octets", len - pd)
    if fc == 0x003 or fc == 0x007 then
        stree:add_tvb_expert_info(E.reject, tvb(off, 2), name)
    else
        stree:add_tvb_expert_info(E.session_event, tvb(off, 2), name)
    end
    return desc
end

---------------------------------------------------------------------------
-- The chunk
---------------------------------------------------------------------------

function p_sctp.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    local ppid = last_value(fx_ppid)
    local sid = last_value(fx_sid)
    local stree = tree:add(p_sctp, tvb())
    if sid ~= nil then
        stree:add(F.stream, sid):set_generated()
    end
    if ppid ~= nil then
        stree:add(F.ppid, ppid):set_generated()
    end
    if ppid ~= PPID_SEGMENT and ppid ~= PPID_CONTROL then
        stree:add_proto_expert_info(E.unknown_ppid,
            "PPID " .. tostring(ppid) .. ": RFC 5043 defines 16 and 17")
        return len
    end
    if pinfo.cols.protocol ~= nil and tostring(pinfo.cols.protocol) ~= "RDMAP" then
        pinfo.cols.protocol = "iWARP/SCTP"
    end
    if len < 2 then
        stree:add_tvb_expert_info(E.truncated, tvb(), "Chunk of " .. len .. " octets has no DDP-SSN")
        add_info(pinfo, "truncated chunk")
        return len
    end
    stree:add(F.ssn, tvb(0, 2))
    local ssn = tvb(0, 2):uint()
    local desc
    if ppid == PPID_SEGMENT then
        stree:set_text(string.format("iWARP DDP over SCTP, Stream %s, DDP-SSN %d, DDP Segment Chunk",
            tostring(sid), ssn))
        stree:set_len(2)
        desc = dissect_ddp(tvb, 2, pinfo, tree)
    else
        stree:set_text(string.format("iWARP DDP over SCTP, Stream %s, DDP-SSN %d, DDP Stream Session Control",
            tostring(sid), ssn))
        desc = dissect_control(tvb, 2, pinfo, stree)
    end
    add_info(pinfo, string.format("[%s:%d] %s", tostring(sid), ssn, desc))
    return len
end

local ppi_table = DissectorTable.get("sctp.ppi")
ppi_table:add(PPID_SEGMENT, p_sctp)
ppi_table:add(PPID_CONTROL, p_sctp)
