package fq

import (
	"testing"
	"time"
)

// flowState drops Flow's second result, for tests that read one field.
func flowState[F any](f F, _ bool) F { return f }

// TestFlowActive protects Flow's second result: false for a flow queue
// that never held a packet, true while it holds one or is on a list, and
// the controller's state reported either way.
func TestFlowActive(t *testing.T) {
	q, err := NewCoDel[uint64](CoDelConfig{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := q.Flow(9); ok || f.Packets != 0 {
		t.Fatalf("fresh flow queue: %+v, %v; want idle", f, ok)
	}
	q.Enqueue(cpkt(1, 100, 9), ct0)
	if f, ok := q.Flow(9); !ok || f.Packets != 1 || !f.New {
		t.Fatalf("after one packet: %+v, %v; want active on the new list", f, ok)
	}
	if _, ok := q.Dequeue(ct0.Add(time.Millisecond)); !ok {
		t.Fatal("no packet")
	}
	for range 3 { // empty looks move the flow off its lists
		q.Dequeue(ct0.Add(2 * time.Millisecond))
	}
	if f, ok := q.Flow(9); ok || f.Packets != 0 || f.New || f.Old {
		t.Fatalf("drained: %+v, %v; want idle", f, ok)
	}
}
