package transport
import ("fmt";"github.com/sctp-rdma/sctp-rdma/sctpllp/native")
func DebugStats(c *Client) string {
	if t, ok := c.mgr.Association().Transport().(*native.Transport); ok { return fmt.Sprintf("%+v", t.Stats()) }
	return ""
}
