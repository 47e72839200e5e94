//go:build !linux

package main

import "io"

// isTerminal reports false off Linux: no live progress line.
func isTerminal(io.Writer) bool { return false }
