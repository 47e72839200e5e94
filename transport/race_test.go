//go:build race

package transport_test

// allocBound is TestRealPathAllocs' bound: under the race detector
// sync.Pool drops a share of its Puts on purpose, and package sctp pools
// its packet buffers (measured 1-2 per operation over sctp-native, 0 over
// mpa); make test runs the test once more without -race against 0.05.
const allocBound = 3.0

// pionStreams is TestTenThousandStreams' stream count over sctp-pion:
// 600 (the soak's count) under the race detector, where opening 10,000
// took minutes; make test runs the test once more without it.
const pionStreams = 600
