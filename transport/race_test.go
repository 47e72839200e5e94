//go:build race

package transport_test

// allocBound is TestRealPathAllocs' bound: under the race detector
// sync.Pool drops a share of its Puts on purpose, and package sctp pools
// its packet buffers (measured 1-2 per operation over sctp-native, 0 over
// mpa); make test runs the test once more without -race against 0.05.
const allocBound = 3.0
