//go:build race

package sctp

// mhAllocBound is TestMultihoming_RunsPerDestination's bound under the
// race detector, whose sync.Pool drops a quarter of its Puts on purpose:
// the packet buffers (about 46 per 64 KiB message at MTU 1500) are then
// allocated now and then (49 per message measured). make test runs the
// test once more without -race against 0.5.
const mhAllocBound = 100.0
