//go:build !linux

package vmtest

// KernelHasSCTP reports false: the VM suites run kernel SCTP on Linux only.
func KernelHasSCTP() bool { return false }
