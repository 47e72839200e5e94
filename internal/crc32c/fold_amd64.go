package crc32c

import "golang.org/x/sys/cpu"

// useFold is set where the CPU has what foldAVX512 uses; useShort where
// it has the CRC32 instruction (SSE4.2).
var (
	useFold  = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE42
	useShort = cpu.X86.HasSSE42
)

// foldAVX512 returns crc32.Update(crc, table, p) for p at least 256
// octets long: it folds p's whole 16-octet blocks, with the register ^crc
// XORed into its first four octets, down to 16 octets congruent to them
// modulo the polynomial, takes their CRC from a zero register (the CRC32
// instruction) and runs that register on over the last 0-15 octets.
//
//go:noescape
func foldAVX512(crc uint32, p []byte, k *[6]uint64) uint32

// shortSSE42 returns crc32.Update(crc, table, p) with the CRC32
// instruction, 8 octets at a time: for the headers and tails of packets,
// where hash/crc32's alignment prologue and calls cost more than the CRC.
//
//go:noescape
func shortSSE42(crc uint32, p []byte) uint32
