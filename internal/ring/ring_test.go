package ring

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRingMatchesSlice protects FIFO/LIFO semantics and capacity: random
// pushes and pops from both ends match a plain slice model.
func TestRingMatchesSlice(t *testing.T) {
	for _, capacity := range []int{0, 1, 3, 4, 5, 100} {
		r := New[int](capacity)
		var model []int
		rnd := rand.New(rand.NewPCG(uint64(capacity), 9))
		for i := range 5000 {
			switch rnd.IntN(4) {
			case 0, 1:
				ok := r.PushBack(i)
				require.Equal(t, len(model) < capacity, ok, "push %d", i)
				if ok {
					model = append(model, i)
				}
			case 2:
				v, ok := r.PopFront()
				require.Equal(t, len(model) > 0, ok)
				if ok {
					require.Equal(t, model[0], v)
					model = model[1:]
				}
			case 3:
				v, ok := r.PopBack()
				require.Equal(t, len(model) > 0, ok)
				if ok {
					require.Equal(t, model[len(model)-1], v)
					model = model[:len(model)-1]
				}
			}
			require.Equal(t, len(model), r.Len())
			require.Equal(t, len(model) == capacity, r.Full())
			for j, want := range model {
				require.Equal(t, want, *r.At(j))
			}
			if len(model) > 0 {
				require.Equal(t, model[0], *r.Front())
				require.Equal(t, model[len(model)-1], *r.Back())
			} else {
				require.Nil(t, r.Front())
				require.Nil(t, r.Back())
			}
		}
	}
}

// TestRingClearsPoppedSlots protects garbage collection of payloads: a popped
// slot no longer holds its pointer.
func TestRingClearsPoppedSlots(t *testing.T) {
	r := New[*int](4)
	x, y := 1, 2
	r.PushBack(&x)
	r.PushBack(&y)
	r.PopFront()
	r.PopBack()
	for _, p := range r.buf {
		require.Nil(t, p)
	}
	r.PushBack(&x)
	r.Clear()
	require.Zero(t, r.Len())
	require.Nil(t, r.buf[0])
}

// TestRingNoAllocs protects the hot path: push and pop never allocate.
func TestRingNoAllocs(t *testing.T) {
	r := New[[4]uint64](64)
	allocs := testing.AllocsPerRun(1000, func() {
		r.PushBack([4]uint64{1})
		r.PopFront()
	})
	require.Zero(t, allocs)
}

// TestRingBadCapacity protects construction: an impossible capacity panics
// at New, never later.
func TestRingBadCapacity(t *testing.T) {
	require.Panics(t, func() { New[int](-1) })
	require.Panics(t, func() { New[int](1 << 31) })
	require.Panics(t, func() { New[int](2).At(0) })
}

// TestResize protects Reconfigure's building block: growing and shrinking
// keep every value in order, and never below Len.
func TestResize(t *testing.T) {
	r := New[int](4)
	r.PopFront()
	for i := range 4 { // wraps around the buffer
		r.PushBack(i)
	}
	r.Resize(10)
	require.Equal(t, 10, r.Cap())
	require.True(t, r.PushBack(4))
	r.Resize(2)
	require.Equal(t, 5, r.Cap(), "never below Len")
	require.True(t, r.Full())
	for i := range 5 {
		v, ok := r.PopFront()
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	r.Resize(2)
	require.Equal(t, 2, r.Cap())
}
