//go:build !amd64

package crc32c

const useFold, useShort = false, false

func foldAVX512(uint32, []byte, *[6]uint64) uint32 { panic("crc32c: no folding on this CPU") }

func shortSSE42(uint32, []byte) uint32 { panic("crc32c: no CRC32 instruction on this CPU") }
