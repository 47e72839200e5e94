package sctp

// ResetStreams sets the next expected SSN of the given incoming streams,
// big-endian stream numbers two octets each (none: every stream), to 0
// (RFC 6525 §5.2.2, an Outgoing SSN Reset Request performed). Numbers
// beyond the inbound streams are ignored. It reports false, changing
// nothing, while an ordered message of one of them is held (a fragment or
// one waiting for an earlier SSN): the caller answers "In progress". The
// work is linear in the request, the held fragments and the streams.
func (r *reassembler) ResetStreams(streams []byte) bool {
	if r.streams == nil {
		return true // no ordered message yet: every expected SSN is 0
	}
	var set []bool // nil: every stream
	if len(streams) > 0 {
		set = make([]bool, len(r.streams))
		for i := 0; i+1 < len(streams); i += 2 {
			if id := int(streams[i])<<8 | int(streams[i+1]); id < len(set) {
				set[id] = true
			}
		}
	}
	affected := func(id int) bool { return set == nil || set[id] }
	for i := range r.frags {
		f := &r.frags[i]
		if f.buf != nil && f.flags&fU == 0 && int(f.stream) < len(r.streams) && affected(int(f.stream)) {
			return false
		}
	}
	for key := range r.pend {
		if id := int(key >> 16); id < len(r.streams) && affected(id) {
			return false
		}
	}
	for id := range r.streams {
		if affected(id) {
			r.streams[id].next = 0
		}
	}
	return true
}
