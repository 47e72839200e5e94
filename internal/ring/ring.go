// Package ring is the growable FIFO ring the RDMA layers queue their work
// in: rdmap's send, order, outstanding-request, receive and inbound queues
// and its CQs, and DDP's posted-buffer queues (one definition for both).
//
// A steady push/pop cycle allocates nothing: the storage grows by doubling
// and never shrinks. The zero Ring is empty and one pointer; its storage is
// made by the first Push, so the many queues of an idle stream (thousands
// of streams per association, each with an endpoint of five queues, two
// CQs and four DDP queues) cost eight octets each.
package ring

// A Ring is not safe for concurrent use: its owner's lock guards it.

// Ring is a FIFO of T. The zero Ring is empty and ready to use.
type Ring[T any] struct {
	s *store[T]
}

// store is the storage of a Ring that has held something. The length of
// buf is a power of two (it starts at two and doubles): an index wraps
// with a mask, not a division (a 64-bit division is tens of cycles, and
// every message passes through several rings).
type store[T any] struct {
	buf  []T
	head int32
	n    int32 // at most 2^31-1 elements
}

// at is the index in buf of the i-th element from the head.
func (s *store[T]) at(i int) int { return (int(s.head) + i) & (len(s.buf) - 1) }

// Len returns the number of elements.
func (q *Ring[T]) Len() int {
	if q.s == nil {
		return 0
	}
	return int(q.s.n)
}

// Allocated reports whether the Ring has storage (it has held something).
func (q *Ring[T]) Allocated() bool { return q.s != nil }

// Push adds v at the back.
func (q *Ring[T]) Push(v T) {
	s := q.s
	if s == nil || int(s.n) == len(s.buf) {
		s = q.grow() // out of line: a steady cycle never gets here
	}
	s.buf[s.at(int(s.n))] = v
	s.n++
}

// grow makes the storage, or doubles it when full, and returns it.
func (q *Ring[T]) grow() *store[T] {
	s := q.s
	if s == nil {
		s = new(store[T])
		q.s = s
	}
	if int(s.n) == len(s.buf) {
		size := max(2, 2*len(s.buf)) // an idle stream holds one or two entries
		nb := make([]T, size)
		for i := range int(s.n) {
			nb[i] = s.buf[s.at(i)]
		}
		s.buf, s.head = nb, 0
	}
	return s
}

// At returns the i-th element from the front; 0 <= i < Len.
func (q *Ring[T]) At(i int) T {
	s := q.s
	return s.buf[s.at(i)]
}

// Front returns the oldest element; the Ring must not be empty.
func (q *Ring[T]) Front() T { return q.s.buf[q.s.head] }

// PopTo removes the oldest element into *dst, as Pop does, without the
// copies a returned value costs a large T; the Ring must not be empty.
func (q *Ring[T]) PopTo(dst *T) {
	var zero T
	s := q.s
	*dst = s.buf[s.head]
	s.buf[s.head] = zero
	s.head = int32(s.at(1))
	s.n--
}

// Pop removes and returns the oldest element; the Ring must not be empty.
// The slot it leaves holds the zero T: the Ring keeps no reference to what
// it handed out (a ULP's buffer, a request).
func (q *Ring[T]) Pop() T {
	var zero T
	s := q.s
	v := s.buf[s.head]
	s.buf[s.head] = zero
	s.head = int32(s.at(1))
	s.n--
	return v
}

// Reset empties the Ring, dropping its references and keeping its storage.
func (q *Ring[T]) Reset() {
	if s := q.s; s != nil {
		clear(s.buf)
		s.head, s.n = 0, 0
	}
}
