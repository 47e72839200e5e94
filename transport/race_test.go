//go:build race

package transport_test

// allocBound is TestRealPathAllocs' bound: under the race detector
// sync.Pool drops a quarter of its Puts on purpose, and package sctp
// pools every packet buffer (the listener copies each packet into one of
// its size class, so a round trip takes several), which then shows as
// allocations; make test runs the test once more without -race against
// 0.05, the bound that matters.
const allocBound = 5.0

// pionStreams is TestTenThousandStreams' stream count over sctp-pion:
// 600 (the soak's count) under the race detector, where opening 10,000
// took minutes; make test runs the test once more without it.
const pionStreams = 600
