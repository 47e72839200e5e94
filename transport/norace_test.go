//go:build !race

package transport_test

// allocBound is TestRealPathAllocs' bound on allocations per operation.
const allocBound = 0.05

// pionStreams is TestTenThousandStreams' stream count over sctp-pion.
const pionStreams = 10000
