//go:build !linux

package harness

// RunVeth needs Linux network namespaces.
func RunVeth(cfg VethConfig) (*VethResults, error) { return nil, errVethUnsupported }
