//go:build !race

package vmtest

const raceEnabled = false
