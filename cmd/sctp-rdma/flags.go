package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"io"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	nsctp "github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// errUsage marks a command line error: exit status 2.
var errUsage = errors.New("usage")

// usageError formats a flag error; the caller prints it and exits 2.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// llpFlags are the lower layer flags shared by serve, bench and ping.
type llpFlags struct {
	llp      string
	ird, ord int
	mtu      int
	// allowNoALI is --sctp-allow-missing-ali: accept SCTP peers that send
	// no DDP Adaptation Layer Indication (RFC 5043 §5.1).
	allowNoALI bool
	// cpuprofile is --cpuprofile: a CPU profile of the whole command.
	cpuprofile string
	// pcap is --pcap: a pcapng capture of every packet (package capture);
	// pcapSnap is --pcap-snaplen.
	pcap     string
	pcapSnap int
	// trace is --trace: the protocol trace as JSON lines (package trace).
	trace string
	// sec are the secure-mode key files (--cert, --key, --ca, --psk,
	// --psk-identity, --server-name); secureOn is --secure.
	sec      secure.Files
	secureOn bool
	// logLevel is --log-level: the least severe log record printed.
	logLevel string
	// tcpCC and sctpCC are --tcp-cc (mpa) and --sctp-cc (sctp-native):
	// the congestion control of each connection or association.
	tcpCC, sctpCC string
	// noOffload is --no-offload (sctp-native): a system call per packet.
	noOffload bool
}

// llpHelp is the --llp help: every LLP of the transport registry, the
// default first.
func llpHelp() string {
	var b strings.Builder
	b.WriteString("lower layer:")
	for i, l := range transport.LLPs() {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s (%s)", l.Name, l.Description)
	}
	return b.String()
}

func (f *llpFlags) register(fs *flag.FlagSet) {
	// The library's defaults (TestCLIDefaultsAreTheLibrarys).
	fs.StringVar(&f.llp, "llp", transport.LLPs()[0].Name, llpHelp())
	fs.IntVar(&f.ird, "ird", iwarp.DefaultIRD, "inbound RDMA Read/Atomic queue depth offered (RFC 6581 §9.1)")
	fs.IntVar(&f.ord, "ord", iwarp.DefaultORD, "outbound RDMA Read/Atomic queue depth requested (RFC 6581 §9.1)")
	fs.IntVar(&f.mtu, "mtu", 0, "path MTU for sctp-pion and sctp-native (0: pion sends 8192-octet packets on loopback and 1500-octet ones otherwise; native probes the path, RFC 8899, up to the route's MTU; pion at most 8220)")
	fs.BoolVar(&f.allowNoALI, "sctp-allow-missing-ali", false, "accept SCTP peers whose INIT/INIT-ACK lacks the DDP Adaptation Layer Indication (RFC 5043 §5.1; sent and required by default)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of this command to the file (go tool pprof)")
	fs.StringVar(&f.pcap, "pcap", "", "write every packet this command sends and receives to a pcapng file (Wireshark, tshark; no root needed)")
	fs.StringVar(&f.trace, "trace", "", "write a protocol trace to the file: JSON lines of each stream's end and, over sctp-native, each SACK with cwnd and RTO, T3-rtx expiries (docs/trace.md)")
	fs.IntVar(&f.pcapSnap, "pcap-snaplen", 0, "with --pcap, keep at most this many octets of each packet (0: whole packets)")
	fs.BoolVar(&f.secureOn, "secure", false, "encrypt and authenticate: SCTP over DTLS for sctp-native (RFC 8261), MPA over TLS 1.3 for mpa (implied by --cert, --ca or --psk)")
	fs.StringVar(&f.sec.Cert, "cert", "", "with --secure: this end's certificate (PEM file)")
	fs.StringVar(&f.sec.Key, "key", "", "with --secure: the private key of --cert (PEM file)")
	fs.StringVar(&f.sec.CA, "ca", "", "with --secure: certificates to trust (PEM): a client's for the server; a server's for clients, which it then requires (mutual authentication)")
	fs.StringVar(&f.sec.PSK, "psk", "", "with --secure: a file holding a pre-shared key in hex, instead of certificates (sctp-native only)")
	fs.StringVar(&f.sec.PSKIdentity, "psk-identity", "", "with --psk: the key's identity hint (default sctp-rdma)")
	fs.StringVar(&f.sec.ServerName, "server-name", "", "with --secure, for a client: the name to verify in the server's certificate (default: the host of --connect)")
	fs.StringVar(&f.tcpCC, "tcp-cc", "", "for mpa: each TCP connection's congestion control (Linux TCP_CONGESTION: cubic, reno, bbr, ...; default the system's)")
	fs.StringVar(&f.sctpCC, "sctp-cc", "", "for sctp-native: each association's congestion control, cubic (RFC 9438, the default) or rfc9260 (RFC 9260 §7.2)")
	fs.BoolVar(&f.noOffload, "no-offload", false, "for sctp-native: send and receive every packet with its own system call (UDP_SEGMENT and UDP_GRO off; see docs/sctp-native.md)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "least severe log record printed on standard error: debug, info, warn or error (the libraries' own lines included; JSON with --json)")
}

// startLogging makes log/slog's default logger, through which every log
// line of the program and of the libraries beneath it goes (pion's too,
// internal/pionlog), write to stderr at the --log-level: as JSON lines
// when the command prints JSON, so that such a command's output is JSON
// from its first line to its last.
func (f *llpFlags) startLogging(stderr io.Writer, asJSON bool) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageError("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if asJSON {
		h = slog.NewJSONHandler(stderr, opts)
	}
	slog.SetDefault(slog.New(h))
	return nil
}

// secureOptions sets the DTLS or TLS configuration of o for the server or
// the client side; peer is the client's --connect address.
func (f *llpFlags) secureOptions(o *transport.Options, server bool, peer string) error {
	if !f.secureOn && !f.sec.Enabled() {
		if f.sec.PSKIdentity != "" || f.sec.ServerName != "" {
			return usageError("--psk-identity and --server-name apply with --secure")
		}
		return nil
	}
	files := f.sec
	if !server && files.ServerName == "" {
		if h, _, err := net.SplitHostPort(peer); err == nil {
			files.ServerName = h
		} else {
			files.ServerName = peer
		}
	}
	var err error
	llp, _ := lookupLLP(f.llp)
	switch {
	case slices.Contains(llp.Options, "DTLS"):
		o.Native.DTLS, err = files.DTLS(server)
	case slices.Contains(llp.Options, "TLS"):
		o.MPA.TLS, err = files.TLS(server)
	default:
		return usageError("--secure needs --llp %s (in DTLS or TLS), not %s",
			strings.Join(append(llpsReading("DTLS"), llpsReading("TLS")...), " or "), f.llp)
	}
	if err != nil {
		return usageError("--secure: %v", err)
	}
	return nil
}

func (f *llpFlags) options() (transport.Options, error) {
	// Each flag goes to every LLP group that has its field (only --llp's
	// is read); a flag of none of --llp's fields is refused below.
	o := transport.Options{LLP: f.llp, IRD: f.ird, ORD: f.ord,
		Native: transport.SCTPOptions{MTU: f.mtu, AllowMissingAdaptation: f.allowNoALI, CongestionControl: f.sctpCC, NoOffload: f.noOffload},
		Pion:   transport.SCTPOptions{MTU: f.mtu, AllowMissingAdaptation: f.allowNoALI},
		Kernel: transport.SCTPOptions{AllowMissingAdaptation: f.allowNoALI},
		MPA:    transport.MPAOptions{TCPCongestion: f.tcpCC}}
	llp, ok := lookupLLP(f.llp)
	if !ok {
		return o, usageError("--llp %q: want %s", f.llp, strings.Join(llpNames(), ", "))
	}
	for _, fl := range []struct {
		set         bool
		name, field string
	}{
		{f.allowNoALI, "--sctp-allow-missing-ali", "AllowMissingAdaptation"},
		{f.mtu != 0, "--mtu", "MTU"},
		{f.tcpCC != "", "--tcp-cc", "TCPCongestion"},
		{f.sctpCC != "", "--sctp-cc", "CongestionControl"},
		{f.noOffload, "--no-offload", "NoOffload"},
	} {
		if fl.set && !slices.Contains(llp.Options, fl.field) {
			return o, usageError("%s applies to --llp %s only", fl.name, strings.Join(llpsReading(fl.field), " and "))
		}
	}
	if f.ird < 1 || f.ird > iwarp.MaxIRD || f.ord < 1 || f.ord > iwarp.MaxIRD {
		return o, usageError(fmt.Sprintf("--ird and --ord must be 1..%d (14-bit fields, RFC 6581 §9)", iwarp.MaxIRD))
	}
	if f.mtu != 0 && f.llp == transport.SCTPNative && (f.mtu < 576 || f.mtu > 65536) {
		return o, usageError("--mtu %d: want 576..65536", f.mtu)
	}
	if f.sctpCC != "" && f.sctpCC != ccname.CongestionRFC9260 && f.sctpCC != ccname.CongestionCUBIC {
		return o, usageError("--sctp-cc %q: want %s or %s", f.sctpCC, ccname.CongestionRFC9260, ccname.CongestionCUBIC)
	}
	if f.mtu != 0 && f.llp == transport.SCTPPion && (f.mtu < 576 || f.mtu > 8220) {
		return o, usageError("--mtu %d: want 576..8220 (pion/sctp cannot take packets above 8192 octets)", f.mtu)
	}
	return o, nil
}

// lookupLLP returns the registry row of the LLP name.
func lookupLLP(name string) (transport.LLP, bool) {
	for _, l := range transport.LLPs() {
		if l.Name == name {
			return l, true
		}
	}
	return transport.LLP{}, false
}

// llpNames are the registry's LLP names, the default first.
func llpNames() []string {
	var names []string
	for _, l := range transport.LLPs() {
		names = append(names, l.Name)
	}
	return names
}

// llpsReading are the LLPs that read the transport.Options field.
func llpsReading(field string) []string {
	var names []string
	for _, l := range transport.LLPs() {
		if slices.Contains(l.Options, field) {
			names = append(names, l.Name)
		}
	}
	return names
}

// durationFlag is --duration and -D: a number of seconds, as perftest's
// -D takes ("1", "0.5"), or a Go duration ("500ms", "2s").
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs < 0 || secs > 1e6 {
			return errors.New("want 0..1000000 seconds")
		}
		*f.d = time.Duration(secs * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want seconds (1, 0.5) or a duration (500ms, 2s)")
	}
	if d < 0 {
		return errors.New("want a positive time")
	}
	*f.d = d
	return nil
}

// parseFlags parses args into fs, mapping -h to errHelp and any other
// problem to a usage error (the flag package already printed it).
func parseFlags(fs *flag.FlagSet, args []string) error {
	_, err := parseInterleaved(fs, args)
	if err == nil && fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	return err
}

// parseInterleaved parses flags and positional arguments in any order
// ("bench write --size 1K read") and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	if !wantsHelp(args) {
		// A mistake gets one line (exitFor adds how to see the flags),
		// not the error followed by the whole usage.
		out := fs.Output()
		fs.SetOutput(io.Discard)
		fs.Usage = func() {}
		defer fs.SetOutput(out)
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, flag.ErrHelp
			}
			return nil, fmt.Errorf("%w: %s", errUsage, flagError(err))
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
		if len(args) == 0 {
			return pos, nil
		}
	}
}

// flagValueRE matches the flag package's complaint about a value.
var flagValueRE = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): (.*)$`)

// flagError rewords the flag package's errors as one line naming the
// flag first: `-n "x": not a whole number`.
func flagError(err error) string {
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		return flagName(name) + ": no such flag"
	}
	m := flagValueRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	why := m[3]
	switch why {
	case "parse error":
		why = "not a number"
		if strings.HasPrefix(m[1], "-") {
			why = "not a positive whole number"
		}
	case "value out of range":
		why = "out of range"
	}
	return fmt.Sprintf("%s %q: %s", flagName(m[2]), m[1], why)
}

// flagName spells a flag as the help does: -n, --iters.
func flagName(name string) string {
	if len(name) > 1 {
		return "--" + name
	}
	return "-" + name
}

// explain turns a failure into what a user reads: one line that names the
// cause first, hints on how to act on it, and the whole error chain only
// at --log-level debug.
func explain(err error) string {
	var b strings.Builder
	short := cause(err)
	b.WriteString(short)
	switch {
	case errors.Is(err, kernel.ErrUnavailable):
		b.WriteString("\n  this kernel offers no SCTP sockets: load the module (modprobe sctp) or use --llp sctp-native")
	case errors.Is(err, transport.ErrRejected) && strings.Contains(err.Error(), bench.ErrClientShare.Error()):
		b.WriteString("\n  ask for fewer --streams, or start the server with --stream-reserve 0 (or a larger --max-streams) to let one client take them all")
	case errors.Is(err, transport.ErrRejected) && strings.Contains(err.Error(), bench.ErrBusy.Error()):
		b.WriteString("\n  the server serves --max-streams streams at once over all clients: ask for fewer --streams, or start it with a larger --max-streams")
	case errors.Is(err, transport.ErrRejected):
		b.WriteString("\n  the server refused the session (see the reason above)")
	}
	if h := otherLLPHint(err); h != "" {
		b.WriteString("\n  " + h)
	}
	if short != err.Error() && !errors.Is(err, bench.ErrServerEnded) { // its chain is that line
		if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
			b.WriteString("\n  detail: " + err.Error())
		} else {
			b.WriteString("\n  (--log-level debug shows the whole error chain)")
		}
	}
	return b.String()
}

// cause is err's message, or a short one naming the cause for the
// failures every user meets: nothing listening at the address, no answer.
func cause(err error) string {
	msg := err.Error()
	for _, first := range []error{bench.ErrPeerUnresponsive, bench.ErrServerEnded} {
		if !errors.Is(err, first) {
			continue
		}
		// "write 64K: stream 1: peer unresponsive for 3s (…)" reads
		// cause first as "peer unresponsive for 3s (…), in write 64K: stream 1".
		if i := strings.Index(msg, first.Error()); i > 0 {
			return msg[i:] + ", in " + strings.TrimSuffix(msg[:i], ": ")
		}
		return msg
	}
	var de *transport.DialError
	if !errors.As(err, &de) {
		return msg
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		how := "TCP connection refused"
		switch de.LLP {
		case transport.SCTPNative, transport.SCTPPion:
			how = "SCTP over UDP: ICMP port unreachable"
		case transport.SCTPKernel:
			how = "SCTP: connection refused"
		}
		return fmt.Sprintf("nothing listens on %s for --llp %s (%s)", de.Addr, de.LLP, how)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer from %s over --llp %s within the --timeout", de.Addr, de.LLP)
	}
	return msg
}

// otherLLPHint looks, when nothing listened for the requested lower layer,
// whether the address answers over another one (a server started with a
// different --llp), and says which.
func otherLLPHint(err error) string {
	var de *transport.DialError
	if !errors.As(err, &de) || !errors.Is(err, syscall.ECONNREFUSED) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	switch de.LLP {
	case transport.SCTPNative, transport.SCTPPion:
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", de.Addr); err == nil {
			_ = c.Close()
			return "a TCP server answers on that port: if it serves --llp mpa, give --llp mpa"
		}
	case transport.MPA:
		if a, err := nsctp.Dial(ctx, "udp", de.Addr, &nsctp.Config{}); err == nil {
			_ = a.Abort()
			return "an SCTP-over-UDP server answers on that port: give the --llp it serves (sctp-native or sctp-pion)"
		}
	}
	return ""
}

// exitFor prints err for command name and returns the exit status.
func exitFor(stderr io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errUsage) {
		msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
		fmt.Fprintf(stderr, "sctp-rdma %s: %s\nrun \"sctp-rdma %s -h\" for the flags\n", name, msg, name)
		return 2
	}
	if errors.Is(err, context.Canceled) {
		// SIGINT or SIGTERM: say so once, not as each stream's "context
		// canceled"; what was measured was printed, marked partial.
		fmt.Fprintf(stderr, "sctp-rdma %s: interrupted\n", name)
		return 130
	}
	fmt.Fprintf(stderr, "sctp-rdma %s: %s\n", name, explain(err))
	return 1
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Microsecond))
}
