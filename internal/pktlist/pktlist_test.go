package pktlist

import (
	"math/rand/v2"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestListsMatchSlices protects per-list FIFO order and the shared capacity:
// random pushes and pops over several lists match slice models.
func TestListsMatchSlices(t *testing.T) {
	const capacity, nlists = 50, 7
	s := New[int](capacity)
	lists := make([]List, nlists)
	for i := range lists {
		lists[i] = MakeList()
	}
	models := make([][]int, nlists)
	total := 0
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		l := rnd.IntN(nlists)
		if rnd.IntN(2) == 0 {
			ok := s.PushBack(&lists[l], aqm.Packet[int]{Payload: i})
			require.Equal(t, total < capacity, ok)
			if ok {
				models[l] = append(models[l], i)
				total++
			}
		} else {
			p, ok := s.PopFront(&lists[l])
			require.Equal(t, len(models[l]) > 0, ok)
			if ok {
				require.Equal(t, models[l][0], p.Payload)
				models[l] = models[l][1:]
				total--
			}
		}
		require.Equal(t, len(models[l]), lists[l].Len())
		require.Equal(t, total, s.Used())
		require.Equal(t, total == capacity, s.Full())
		if f := s.Front(&lists[l]); len(models[l]) > 0 {
			require.Equal(t, models[l][0], f.Payload)
		} else {
			require.Nil(t, f)
		}
	}
}

// TestSlabClearsNodes protects garbage collection: popped nodes drop their
// payload pointers.
func TestSlabClearsNodes(t *testing.T) {
	s := New[*int](2)
	l := MakeList()
	x := 1
	s.PushBack(&l, aqm.Packet[*int]{Payload: &x})
	s.PopFront(&l)
	for _, n := range s.nodes {
		require.Nil(t, n.pkt.Payload)
	}
}

// TestSlabNoAllocs protects the hot path: push and pop never allocate.
func TestSlabNoAllocs(t *testing.T) {
	s := New[uint64](16)
	l := MakeList()
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		s.PushBack(&l, aqm.Packet[uint64]{Payload: 1})
		s.PopFront(&l)
	}))
}

// TestSlabZeroCapacity protects the degenerate slab: nothing fits, nothing
// panics.
func TestSlabZeroCapacity(t *testing.T) {
	s := New[int](0)
	l := MakeList()
	require.False(t, s.PushBack(&l, aqm.Packet[int]{}))
	_, ok := s.PopFront(&l)
	require.False(t, ok)
	require.Panics(t, func() { New[int](-1) })
}
