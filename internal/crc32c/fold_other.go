//go:build !amd64

package crc32c

const useFold = false

func foldAVX512(uint32, []byte, *[6]uint64) uint32 { panic("crc32c: no folding on this CPU") }
