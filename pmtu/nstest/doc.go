// Package nstest holds the network-namespace tests of path MTU handling:
// two hosts and a router in Linux network namespaces (internal/netns)
// joined by veth links, with link MTUs changed under running RDMA Writes
// over userspace SCTP (pion over UDP) and MPA over TCP. The tests need
// root (CAP_NET_ADMIN); without it they skip, except under CI=true where
// they fail.
package nstest
