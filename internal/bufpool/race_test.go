//go:build race

package bufpool

// raceOn: under the race detector sync.Pool drops a share of Puts on
// purpose, so a pooled Get allocates now and then.
const raceOn = true
