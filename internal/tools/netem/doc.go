// Package netem emulates an impaired network path in userspace: delay and
// jitter, random and bursty loss, duplication, reordering, and a
// bottleneck of a given rate with a bounded queue, applied to every IP
// packet that crosses a link between two network namespaces.
package netem

// It is what the project uses where the kernel has no sch_netem (this
// development host among them): the fault suites (e2e/faults) run their
// lossy and reordering links through it, and `sctp-rdma harness --wan`
// measures every LLP over emulated wide-area paths with it. The model
// follows Linux netem's (tc-netem(8)): loss is decided first, then the
// bottleneck (netem's "rate", serialising packets at the configured bit
// rate, here with a tail-drop queue of a bounded number of octets), then
// the delay with its jitter in a time-ordered queue (netem's tfifo, so
// that jitter reorders too); a "reorder" fraction of packets skips the
// delay. Bursty loss is the simple Gilbert model (a bad state that loses
// every packet), parameterised by the mean loss and the mean burst length.
//
// Model is the pure per-direction decision (tested without a network);
// Link (Linux, root) joins two fresh network namespaces with two TUN
// devices and runs a Model in each direction, or, where the kernel has
// sch_netem, with a veth pair under netem. Namespaces, devices and qdiscs
// are set up over netlink, not with iproute2, so that a Link works in the
// busybox guest of internal/tools/vmtest too (the kernel-SCTP WAN runs).

// Backends of a Link.
const (
	// BackendTUN runs the Model in this process between two TUN devices.
	BackendTUN = "tun"
	// BackendKernel is a veth pair with the kernel's netem qdisc on
	// both ends (sch_netem).
	BackendKernel = "netem"
)
