//go:build linux && (amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x)

package ddp

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A message of 2^32 octets exceeds the DDP message size limit (RFC 5041
// §4.3: 32-bit MO). The buffer is reserved address space (MAP_NORESERVE),
// never touched, so the test costs no memory.
func TestSendRejectsMessageOver4GiB(t *testing.T) {
	size := int(uint64(maxMessageLen) + 1)
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	require.NoError(t, err)
	defer func() { require.NoError(t, syscall.Munmap(mem)) }()

	s := &recStream{schedule: []int{1448}}
	sender := NewSender(s)
	assert.ErrorIs(t, sender.SendTagged(0, 1, 0, mem), errMessageTooLarge)
	msn, err := sender.SendUntagged([5]byte{}, 0, mem)
	assert.ErrorIs(t, err, errMessageTooLarge)
	assert.Zero(t, msn)
	assert.Empty(t, s.segs)
	assert.Equal(t, uint32(1), sender.nextMSN(0))
}
