package ring

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireOnlyLiveSlots checks the clear-on-pop guarantee: every slot of
// the storage outside the ring's values is nil, so no popped pointer is
// kept alive.
func requireOnlyLiveSlots(t *testing.T, r *Ring[*int]) {
	t.Helper()
	live := make(map[int]bool, r.Len())
	for i := range r.Len() {
		live[int((r.head+uint32(i))&r.mask)] = true
	}
	for i, p := range r.buf {
		if !live[i] {
			require.Nil(t, p, "slot %d outside the ring holds a pointer", i)
		}
	}
}

// requireSame checks that two slices hold the same pointers in order.
func requireSame(t *testing.T, want, got []*int) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Same(t, want[i], got[i], "index %d", i)
	}
}

// TestBulkMatchesSlice protects the bulk operations' semantics: random
// PushBackN, PopFrontN, Spare/Commit and Peek/Discard mixed with single
// pushes and pops match a plain slice model, wrap around the storage, stop
// at the capacity, and leave every slot outside the ring cleared.
func TestBulkMatchesSlice(t *testing.T) {
	for _, capacity := range []int{0, 1, 3, 4, 5, 16, 100} {
		r := New[*int](capacity)
		vals := make([]int, 20000)
		for i := range vals {
			vals[i] = i
		}
		var model []*int
		next := 0
		take := func(k int) []*int {
			out := make([]*int, k)
			for i := range out {
				out[i] = &vals[next%len(vals)]
				next++
			}
			return out
		}
		rnd := rand.New(rand.NewPCG(uint64(capacity), 14))
		for range 3000 {
			k := rnd.IntN(2*capacity+3) - 1 // -1 .. 2·cap+1
			switch rnd.IntN(6) {
			case 0:
				src := take(max(k, 0))
				got := r.PushBackN(src)
				want := min(len(src), capacity-len(model))
				require.Equal(t, want, got, "PushBackN")
				model = append(model, src[:got]...)
			case 1:
				dst := make([]*int, max(k, 0))
				got := r.PopFrontN(dst)
				want := min(len(dst), len(model))
				require.Equal(t, want, got, "PopFrontN")
				requireSame(t, model[:got], dst[:got])
				for _, p := range dst[got:] {
					require.Nil(t, p, "PopFrontN wrote past its count")
				}
				model = model[got:]
			case 2:
				run := r.Spare(k)
				require.LessOrEqual(t, len(run), max(k, 0))
				require.LessOrEqual(t, len(run), capacity-len(model))
				if k > 0 && len(model) < capacity {
					require.NotEmpty(t, run, "Spare returns a slot when there is room")
				}
				for _, p := range run {
					require.Nil(t, p, "a spare slot holds a value")
				}
				w := rnd.IntN(len(run) + 1)
				src := take(w)
				copy(run, src)
				r.Commit(w)
				model = append(model, src...)
			case 3:
				run := r.Peek(k)
				require.LessOrEqual(t, len(run), max(k, 0))
				if k > 0 && len(model) > 0 {
					require.NotEmpty(t, run, "Peek returns a value when there is one")
				}
				requireSame(t, model[:len(run)], run)
				d := rnd.IntN(len(model) + 1)
				r.Discard(d)
				model = model[d:]
			case 4:
				src := take(1)
				if r.PushBack(src[0]) {
					model = append(model, src[0])
				}
			case 5:
				if p, ok := r.PopFront(); ok {
					require.Equal(t, model[0], p)
					model = model[1:]
				}
			}
			require.Equal(t, len(model), r.Len())
			for j, want := range model {
				require.Equal(t, want, *r.At(j))
			}
			requireOnlyLiveSlots(t, r)
		}
	}
}

// TestBulkMisuse protects the ring's invariants against a wrong count:
// committing more than the free slots or discarding more than the values
// panics instead of corrupting the ring.
func TestBulkMisuse(t *testing.T) {
	r := New[int](4)
	require.Panics(t, func() { r.Commit(5) })
	require.Panics(t, func() { r.Commit(-1) })
	require.Panics(t, func() { r.Discard(1) })
	require.Panics(t, func() { r.Discard(-1) })
	require.Equal(t, 4, r.PushBackN([]int{1, 2, 3, 4, 5}))
	require.Panics(t, func() { r.Commit(1) })
	require.Empty(t, r.Spare(3))
	require.Equal(t, 0, r.Len()-4)
}

// TestBulkNoAllocs protects the burst paths built on the bulk operations:
// none of them allocates.
func TestBulkNoAllocs(t *testing.T) {
	r := New[[4]uint64](64)
	src := make([][4]uint64, 40)
	dst := make([][4]uint64, 40)
	allocs := testing.AllocsPerRun(1000, func() {
		r.PushBackN(src)
		r.PopFrontN(dst)
		run := r.Spare(30)
		r.Commit(len(run))
		r.Discard(len(r.Peek(30)))
	})
	require.Zero(t, allocs)
}

// pkt has aqm.Packet's shape: at most four fields, so the compiler keeps it
// in registers, and 32 bytes with a word payload.
type pkt struct {
	payload uint64
	meta
	stamp int64
}

type meta struct {
	size, hash uint32
	ecn        uint8
}

// BenchmarkRing compares a burst of n through the ring one value at a time
// (PushBack/PopFront) with the bulk operations (PushBackN/PopFrontN, and
// Spare/Commit with Peek/Discard writing and reading each slot in place),
// with 100 values standing. The ns/val metric is the figure to compare.
func BenchmarkRing(b *testing.B) {
	for _, n := range []int{1, 8, 32, 128} {
		setup := func(b *testing.B) (*Ring[pkt], []pkt, []pkt) {
			r := New[pkt](1024)
			for i := range 100 {
				r.PushBack(pkt{payload: uint64(i), meta: meta{size: 1500, hash: uint32(i), ecn: 1}})
			}
			src := make([]pkt, n)
			for i := range src {
				src[i] = pkt{payload: uint64(i), meta: meta{size: 1500, hash: uint32(i), ecn: 1}}
			}
			b.ReportAllocs()
			return r, src, make([]pkt, n)
		}
		report := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/val")
		}
		b.Run("single/"+itoa(n), func(b *testing.B) {
			r, src, dst := setup(b)
			for b.Loop() {
				for i := range src {
					p := src[i]
					p.stamp = 7
					r.PushBack(p)
				}
				for i := range dst {
					dst[i], _ = r.PopFront()
				}
			}
			report(b)
		})
		b.Run("bulk/"+itoa(n), func(b *testing.B) {
			r, src, dst := setup(b)
			for b.Loop() {
				r.PushBackN(src)
				r.PopFrontN(dst)
			}
			report(b)
		})
		b.Run("inplace/"+itoa(n), func(b *testing.B) {
			r, src, dst := setup(b)
			for b.Loop() {
				for i := 0; i < len(src); {
					run := r.Spare(len(src) - i)
					for j := range run {
						s := &run[j]
						*s = src[i+j]
						s.stamp = 7
					}
					r.Commit(len(run))
					i += len(run)
				}
				for i := 0; i < len(dst); {
					run := r.Peek(len(dst) - i)
					copy(dst[i:], run)
					r.Discard(len(run))
					i += len(run)
				}
			}
			report(b)
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
