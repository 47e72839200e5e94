package rdmap

// fifo is a growable ring buffer: steady push/pop cycles allocate nothing.
type fifo[T any] struct {
	buf  []T
	head int32 // 32 bits: an endpoint has five of these, and thousands of
	n    int32 // streams one endpoint each
}

func (q *fifo[T]) len() int { return int(q.n) }

func (q *fifo[T]) push(v T) {
	if int(q.n) == len(q.buf) {
		size := max(2, 2*len(q.buf)) // an idle stream holds one or two entries
		nb := make([]T, size)
		for i := range int(q.n) {
			nb[i] = q.buf[(int(q.head)+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(int(q.head)+int(q.n))%len(q.buf)] = v
	q.n++
}

// at returns the i-th element from the front; 0 <= i < len.
func (q *fifo[T]) at(i int) T { return q.buf[(int(q.head)+i)%len(q.buf)] }

// front returns the oldest element; the queue must not be empty.
func (q *fifo[T]) front() T { return q.buf[q.head] }

// pop removes and returns the oldest element; the queue must not be empty.
func (q *fifo[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = int32((int(q.head) + 1) % len(q.buf))
	q.n--
	return v
}

// reset empties the queue, dropping references.
func (q *fifo[T]) reset() {
	clear(q.buf)
	q.head, q.n = 0, 0
}
