// Package ring provides a fixed-capacity FIFO ring buffer that never
// allocates after construction and clears the slots it pops, so the garbage
// collector can reclaim whatever a popped value pointed to.
package ring

// Ring is a fixed-capacity double-ended FIFO of T. The zero Ring has
// capacity zero; use [New].
type Ring[T any] struct {
	buf  []T    // len(buf) is a power of two
	mask uint32 // len(buf)-1
	head uint32 // index of the front element, before masking
	n    uint32 // number of elements
	max  uint32 // capacity asked for (≤ len(buf))
}

// New returns a ring that holds at most capacity values. Storage is rounded up
// to a power of two so indexing is a mask. capacity must be in [0, 1<<30].
func New[T any](capacity int) *Ring[T] {
	r := &Ring[T]{}
	r.Init(capacity)
	return r
}

// Init (re)initialises r in place with the given capacity, dropping any
// contents. It allocates; call it only at construction.
func (r *Ring[T]) Init(capacity int) {
	if capacity < 0 || capacity > 1<<30 {
		panic("ring: capacity out of range")
	}
	size := 1
	for size < capacity {
		size <<= 1
	}
	*r = Ring[T]{buf: make([]T, size), mask: uint32(size - 1), max: uint32(capacity)}
}

// Len returns the number of values in the ring.
func (r *Ring[T]) Len() int { return int(r.n) }

// Cap returns the ring's capacity.
func (r *Ring[T]) Cap() int { return int(r.max) }

// Full reports whether the ring holds Cap values.
func (r *Ring[T]) Full() bool { return r.n >= r.max }

// PushBack appends v and reports whether there was room.
func (r *Ring[T]) PushBack(v T) bool {
	if r.n >= r.max {
		return false
	}
	r.buf[(r.head+r.n)&r.mask] = v
	r.n++
	return true
}

// PopFront removes and returns the oldest value.
func (r *Ring[T]) PopFront() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	i := r.head & r.mask
	v := r.buf[i]
	r.buf[i] = zero
	r.head++
	r.n--
	return v, true
}

// PopBack removes and returns the newest value.
func (r *Ring[T]) PopBack() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	r.n--
	i := (r.head + r.n) & r.mask
	v := r.buf[i]
	r.buf[i] = zero
	return v, true
}

// Front returns a pointer to the oldest value, or nil if the ring is empty.
// The pointer is valid until the next Pop or Push.
func (r *Ring[T]) Front() *T {
	if r.n == 0 {
		return nil
	}
	return &r.buf[r.head&r.mask]
}

// Back returns a pointer to the newest value, or nil if the ring is empty.
func (r *Ring[T]) Back() *T {
	if r.n == 0 {
		return nil
	}
	return &r.buf[(r.head+r.n-1)&r.mask]
}

// At returns a pointer to the i-th value from the front (0 is the oldest).
// It panics if i is out of range.
func (r *Ring[T]) At(i int) *T {
	if i < 0 || uint32(i) >= r.n {
		panic("ring: index out of range")
	}
	return &r.buf[(r.head+uint32(i))&r.mask]
}

// Resize changes the capacity to max(capacity, Len()), keeping the values
// and their order. It allocates when the storage must change; call it off
// the hot path.
func (r *Ring[T]) Resize(capacity int) {
	capacity = max(capacity, r.Len())
	if capacity == r.Cap() {
		return
	}
	var nr Ring[T]
	nr.Init(capacity)
	for i := range r.Len() {
		nr.PushBack(*r.At(i))
	}
	*r = nr
}

// Clear removes all values, zeroing their slots.
func (r *Ring[T]) Clear() {
	clear(r.buf)
	r.head, r.n = 0, 0
}

// PushBackN appends the longest prefix of src that fits and returns its
// length. It copies whole runs (at most two, when the storage wraps) and
// updates the ring's length once.
func (r *Ring[T]) PushBackN(src []T) int {
	k := min(len(src), int(r.max-min(r.n, r.max)))
	done := 0
	for done < k {
		run := r.Spare(k - done)
		copy(run, src[done:])
		r.n += uint32(len(run))
		done += len(run)
	}
	return k
}

// PopFrontN moves the oldest min(len(dst), Len()) values into dst, oldest
// first, clears the slots they leave and returns how many it moved. It
// copies and clears whole runs (at most two) and updates the ring's head
// and length once per run.
func (r *Ring[T]) PopFrontN(dst []T) int {
	k := min(len(dst), int(r.n))
	done := 0
	for done < k {
		run := r.Peek(k - done)
		copy(dst[done:], run)
		clear(run)
		r.head += uint32(len(run))
		r.n -= uint32(len(run))
		done += len(run)
	}
	return k
}

// Spare returns the free slots right after the newest value, up to k of
// them and no further than the end of the storage, so the slice may be
// shorter than k (and is empty when the ring is full or k ≤ 0). A burst
// writes values into it in order and then makes them part of the ring with
// [Ring.Commit]; values written but not committed stay in the storage
// (clear them, or overwrite them later) and are not part of the ring.
func (r *Ring[T]) Spare(k int) []T {
	free := int(r.max - min(r.n, r.max))
	k = min(k, free)
	if k <= 0 {
		return nil
	}
	t := int((r.head + r.n) & r.mask)
	return r.buf[t:min(t+k, len(r.buf))]
}

// Commit appends the first k slots last returned by [Ring.Spare], which
// the caller has written. k must not exceed that slice's length.
func (r *Ring[T]) Commit(k int) {
	if k < 0 || r.n+uint32(k) > r.max {
		panic("ring: commit beyond the free slots")
	}
	r.n += uint32(k)
}

// Peek returns the oldest values, up to k of them and no further than the
// end of the storage, so the slice may be shorter than k (and is empty when
// the ring is empty or k ≤ 0). The slice is valid until the next Push, Pop
// or Discard. Reading a burst from it and then calling [Ring.Discard]
// pops the burst with one update.
func (r *Ring[T]) Peek(k int) []T {
	k = min(k, int(r.n))
	if k <= 0 {
		return nil
	}
	h := int(r.head & r.mask)
	return r.buf[h:min(h+k, len(r.buf))]
}

// Discard removes the oldest k values, clearing their slots. It panics if
// k is negative or above Len.
func (r *Ring[T]) Discard(k int) {
	if k < 0 || uint32(k) > r.n {
		panic("ring: discard beyond the values")
	}
	for k > 0 {
		run := r.Peek(k)
		clear(run)
		r.head += uint32(len(run))
		r.n -= uint32(len(run))
		k -= len(run)
	}
}
