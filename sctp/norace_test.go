//go:build !race

package sctp

// mhAllocBound is TestMultihoming_RunsPerDestination's bound on
// allocations per 64 KiB message (about 46 packets at MTU 1500): one
// allocation per message would count 1, one per packet 46. Below it are
// the buffers the pools gain while the window still grows (0.01-0.3 per
// message measured).
const mhAllocBound = 0.5
