// Package pktlist keeps many FIFO packet lists in one preallocated slab of
// nodes linked by index, for fair queues that hold one list per flow and a
// shared packet limit. Nothing allocates after [New]; popped nodes are cleared
// so their payloads can be collected.
package pktlist

import "github.com/aqmkit/aqmkit/aqm"

const nilIdx = ^uint32(0)

type node[T any] struct {
	pkt  aqm.Packet[T]
	next uint32
}

// List is one FIFO of packets in a [Slab]. The zero List is not ready: use
// [MakeList] or set it to [Empty].
type List struct {
	head, tail uint32
	n          uint32
}

// Empty is the empty List value.
var Empty = List{head: nilIdx, tail: nilIdx}

// MakeList returns an empty list.
func MakeList() List { return Empty }

// Len returns the number of packets in l.
func (l *List) Len() int { return int(l.n) }

// Slab owns the nodes of every list built on it.
type Slab[T any] struct {
	nodes []node[T]
	free  uint32 // head of the free list
	used  int
}

// New returns a slab with room for capacity packets in all its lists
// together. capacity must be in [0, 1<<31).
func New[T any](capacity int) *Slab[T] {
	if capacity < 0 || capacity >= 1<<31 {
		panic("pktlist: capacity out of range")
	}
	s := &Slab[T]{nodes: make([]node[T], capacity)}
	s.reset()
	return s
}

func (s *Slab[T]) reset() {
	for i := range s.nodes {
		s.nodes[i] = node[T]{next: uint32(i + 1)}
	}
	if len(s.nodes) > 0 {
		s.nodes[len(s.nodes)-1].next = nilIdx
		s.free = 0
	} else {
		s.free = nilIdx
	}
	s.used = 0
}

// Cap returns the slab's capacity in packets.
func (s *Slab[T]) Cap() int { return len(s.nodes) }

// Used returns the number of packets held across all lists.
func (s *Slab[T]) Used() int { return s.used }

// Full reports whether no free node is left.
func (s *Slab[T]) Full() bool { return s.free == nilIdx }

// PushBack appends p to l and reports whether a free node was available.
func (s *Slab[T]) PushBack(l *List, p aqm.Packet[T]) bool {
	i := s.free
	if i == nilIdx {
		return false
	}
	nd := &s.nodes[i]
	s.free = nd.next
	nd.pkt, nd.next = p, nilIdx
	if l.tail == nilIdx {
		l.head = i
	} else {
		s.nodes[l.tail].next = i
	}
	l.tail = i
	l.n++
	s.used++
	return true
}

// PopFront removes and returns the oldest packet of l; its node is cleared.
func (s *Slab[T]) PopFront(l *List) (p aqm.Packet[T], ok bool) {
	i := l.head
	if i == nilIdx {
		return p, false
	}
	nd := &s.nodes[i]
	p = nd.pkt
	l.head = nd.next
	if l.head == nilIdx {
		l.tail = nilIdx
	}
	l.n--
	nd.pkt = aqm.Packet[T]{}
	nd.next = s.free
	s.free = i
	s.used--
	return p, true
}

// Front returns a pointer to the oldest packet of l, or nil if l is empty.
// It is valid until the next operation on the slab.
func (s *Slab[T]) Front(l *List) *aqm.Packet[T] {
	if l.head == nilIdx {
		return nil
	}
	return &s.nodes[l.head].pkt
}
