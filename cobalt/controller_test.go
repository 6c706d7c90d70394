package cobalt

import (
	"math/big"
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestBlueDropsMarkedPackets protects BLUE's policing of ECN senders: a
// packet the CoDel half has just marked CE still meets BLUE's draw, so with
// BLUE's probability at 1 an ECN-capable packet is dropped, not marked,
// and the drop counts as an overload drop of an ECN-capable packet.
func TestBlueDropsMarkedPackets(t *testing.T) {
	q, err := New[int](Config{LimitPackets: 2, Control: Control{BlueIncrement: 1}, Seed: 1}, nil)
	require.NoError(t, err)
	at := func(ms int) aqm.Time { return aqm.Time(ms) * aqm.Time(time.Millisecond) }
	for i := range 3 { // the third overflows: BLUE to 1, CoDel forced to signal
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, ECN: aqm.ECT0}}, at(10))
	}
	require.InDelta(t, 1, q.Detail().BlueProbability, 1e-9)
	p, ok := q.Dequeue(at(20))
	require.False(t, ok, "BLUE at probability 1 must drop every packet, got %+v", p)
	s, d := q.Stats(), q.Detail()
	require.Equal(t, uint64(2), s.DroppedOverload.Packets)
	require.Zero(t, s.Marked.Packets)
	require.Equal(t, uint64(2), d.DroppedBlue)
	// The mark still counts as a CoDel signal: the episode's count moved on.
	require.Equal(t, uint32(2), d.Count)

	// The controller says the CoDel half marked the packet BLUE dropped.
	prm := Config{Control: Control{BlueIncrement: 1}}.Params()
	var c Controller
	c.Init(&prm, 1)
	c.Overflow(&prm, at(10))
	require.Equal(t, DropBlue, c.Decide(&prm, at(20), 10*time.Millisecond, aqm.ECT1))
	require.True(t, c.Marked())
	require.Equal(t, DropBlue, c.Decide(&prm, at(21), 11*time.Millisecond, aqm.ECT1))
	require.False(t, c.Marked(), "not due: the CoDel half did not mark")
}

// slowDecay is count decay written out from its definition: while count
// is positive and the next time has passed, count falls by one and the
// next time moves on by floor(interval/sqrt(count)) of the new count (a
// full interval at 0 and 1), with no bound on the steps.
func slowDecay(interval int64, count uint32, next, now aqm.Time) uint32 {
	for count > 0 && next <= now {
		count--
		g := interval
		if count > 1 {
			x := new(big.Int).Mul(big.NewInt(interval), big.NewInt(interval))
			g = x.Sqrt(x.Quo(x, big.NewInt(int64(count)))).Int64()
		}
		next += aqm.Time(g)
	}
	return count
}

// TestDecayAfterIdle protects count decay after an idle period: the whole
// backlog of decay is worked off, at most 64 steps per call, over the calls
// that follow, to the count an unbounded decay reaches; and a gap long
// enough to decay count to zero resets it at once, as Linux's unbounded
// loop would.
func TestDecayAfterIdle(t *testing.T) {
	for _, tc := range []struct {
		count uint32
		idle  time.Duration
	}{
		{214, 5 * time.Second},  // decays to 0 in one call
		{5000, time.Second},     // about 680 steps: eleven calls
		{5000, 3 * time.Second}, // about 2400 steps
		{30, 200 * time.Millisecond},
	} {
		prm := Config{Control: Control{DisableBlueThreshold: true}}.Params()
		var c Controller
		now := t0
		for c.count < tc.count { // above target until count reaches tc.count
			now += aqm.Time(200 * time.Microsecond)
			c.Decide(&prm, now, 10*time.Millisecond, aqm.NotECT)
		}
		require.Equal(t, tc.count, c.count)
		st := c.State()
		now += aqm.Time(tc.idle)
		want := slowDecay(prm.interval, st.Count, st.Next, now)
		prev := st.Count
		for call := range 200 {
			c.Decide(&prm, now, time.Millisecond, aqm.NotECT)
			got := c.State().Count
			require.LessOrEqual(t, got, prev, "call %d", call)
			if want > 0 {
				require.LessOrEqual(t, prev-got, uint32(maxDecaySteps), "call %d: bounded work", call)
			}
			prev = got
		}
		require.Equal(t, want, prev, "count %d, idle %v", tc.count, tc.idle)
		require.Greater(t, c.State().Next, now, "no decay left owed")
		t.Logf("count %d, idle %v: decays to %d", tc.count, tc.idle, want)
	}
}

// TestControllerSize protects the per-flow footprint the docs promise: a
// Controller is 32 bytes, so fair queues embed one per flow cheaply.
func TestControllerSize(t *testing.T) {
	require.Equal(t, uintptr(32), unsafe.Sizeof(Controller{}))
}
