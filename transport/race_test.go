//go:build race

package transport_test

// allocBound is TestRealPathAllocs' bound: under the race detector
// sync.Pool drops a quarter of its Puts on purpose, and package sctp pools
// its packet buffers, so the count follows the packets per operation,
// which rise on a loaded host as fewer chunks share a packet (1.4-3.0 per
// operation over sctp-native, 0-0.5 over mpa): twice
// the most measured. make test runs the test once more without -race
// against 0.05, the bound that proves nothing is allocated per operation.
const allocBound = 6.0

// pionStreams is TestTenThousandStreams' stream count over sctp-pion:
// 600 (the soak's count) under the race detector, where opening 10,000
// took minutes; make test runs the test once more without it.
const pionStreams = 600
