//go:build race

package vmtest

const raceEnabled = true
