//go:build !linux

package harness

// RunWAN needs Linux network namespaces.
func RunWAN(cfg WANConfig) (*WANResults, error) { return nil, errWANUnsupported }
