package crc32c

import "golang.org/x/sys/cpu"

// useFold is set where the CPU has what foldAVX512 uses.
var useFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ

// foldAVX512 returns crc32.Update(crc, table, p) for p a multiple of 64
// octets and at least 256 long: it folds p, with the register ^crc XORed
// into its first four octets, down to 16 octets congruent to it modulo the
// polynomial, whose CRC from a zero register (the CRC32 instruction) is
// p's.
//
//go:noescape
func foldAVX512(crc uint32, p []byte, k *[6]uint64) uint32
