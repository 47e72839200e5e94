//go:build !race

package bufpool

const raceOn = false
