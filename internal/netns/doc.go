// Package netns builds Linux network-namespace topologies for tests: two
// hosts and a router joined by veth links (Topology), two hosts joined by
// two links that can be cut or black-holed (DualPath), a function run
// inside a namespace (In), the ip command (IP) and the kernel's IP and
// fragment counters. It needs root (CAP_NET_ADMIN).
package netns
