package siw

import (
	"context"
	"fmt"
	"net"

	"github.com/sctp-rdma/sctp-rdma/mpa"
)

// dialMPA is mpa.Dial with SO_REUSEADDR on the client socket.
//
// rdma_cm picks the local port of an iWARP connection at random from
// ip_local_port_range, checking only its own port space; siw then binds
// its kernel socket to that port (with SO_REUSEADDR) and the connect fails
// with EADDRINUSE if an ordinary TCP socket without SO_REUSEADDR holds the
// port, including one in TIME_WAIT. Our clients' ephemeral ports come from
// the same range, so each of them would leave a port that siw's next
// rdma_cm connection may draw (perftest 4.5's client then crashes in its
// retry path). With SO_REUSEADDR on our side both binds are allowed.
func dialMPA(ctx context.Context, addr string, cfg *mpa.Config) (*mpa.Conn, error) {
	d := net.Dialer{Control: reuseAddr}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mpa: dial: %w", err)
	}
	// mpa.Client sends the Terminate of a failed RFC 6581 negotiation and
	// closes nc itself; after any other failure (a rejecting Reply leaves
	// nc open, RFC 5044 §7.1.2 rule 3) the socket is closed here, as
	// mpa.Dial does.
	c, err := mpa.Client(ctx, nc, cfg)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}
