package rdmap

// fifo is a growable ring buffer: steady push/pop cycles allocate nothing.
// The zero fifo is empty and holds one pointer: an endpoint has five and
// each CQ one, thousands of streams an endpoint and two CQs each, and an
// idle stream's queues are mostly empty, so the ring is made by the first
// push.
type fifo[T any] struct {
	r *ring[T]
}

// ring is the storage of a fifo that has held something.
type ring[T any] struct {
	buf  []T
	head int32
	n    int32
}

func (q *fifo[T]) len() int {
	if q.r == nil {
		return 0
	}
	return int(q.r.n)
}

func (q *fifo[T]) push(v T) {
	r := q.r
	if r == nil {
		r = new(ring[T])
		q.r = r
	}
	if int(r.n) == len(r.buf) {
		size := max(2, 2*len(r.buf)) // an idle stream holds one or two entries
		nb := make([]T, size)
		for i := range int(r.n) {
			nb[i] = r.buf[(int(r.head)+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(int(r.head)+int(r.n))%len(r.buf)] = v
	r.n++
}

// at returns the i-th element from the front; 0 <= i < len.
func (q *fifo[T]) at(i int) T { r := q.r; return r.buf[(int(r.head)+i)%len(r.buf)] }

// front returns the oldest element; the queue must not be empty.
func (q *fifo[T]) front() T { r := q.r; return r.buf[r.head] }

// pop removes and returns the oldest element; the queue must not be empty.
func (q *fifo[T]) pop() T {
	var zero T
	r := q.r
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = int32((int(r.head) + 1) % len(r.buf))
	r.n--
	return v
}

// reset empties the queue, dropping references.
func (q *fifo[T]) reset() {
	if r := q.r; r != nil {
		clear(r.buf)
		r.head, r.n = 0, 0
	}
}
