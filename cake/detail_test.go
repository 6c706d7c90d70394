package cake

import (
	"strings"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestDetailMetrics protects Detail.Metrics: unique lower_snake names,
// values equal to the Detail's fields, and per-tin rows in display order.
func TestDetailMetrics(t *testing.T) {
	q, _ := New[int](Config{Seed: 1, Rate: 10 * aqm.Mbit, TinMode: DiffServ4}, nil)
	for i := range 100 {
		q.EnqueueInfo(pkt(uint32(100+i), uint32(i%7)), Info{DSCP: uint8(i % 64)}, ms)
	}
	q.Dequeue(2 * ms)
	d := q.Detail()
	require.Equal(t, 4, d.NumTins)
	require.Equal(t, "Bulk", d.Tins[0].Name)
	require.Equal(t, "Best Effort", d.Tins[1].Name)
	require.Equal(t, aqm.Rate(10*aqm.Mbit/16), d.Tins[0].Threshold)
	seen := map[string]float64{}
	for m := range d.metrics() {
		_, dup := seen[m.Name]
		require.False(t, dup, m.Name)
		require.Equal(t, strings.ToLower(m.Name), m.Name)
		require.NotContains(t, m.Name, " ")
		seen[m.Name] = m.Value
	}
	require.Equal(t, float64(d.MemoryBytes), seen["memory_bytes"])
	require.Equal(t, float64(d.MemoryLimit), seen["memory_limit_bytes"])
	require.Equal(t, float64(d.Tins[1].Packets), seen["tin1_arrived_packets"])
	require.Equal(t, float64(d.Tins[3].BacklogBytes), seen["tin3_backlog_bytes"])
	require.Equal(t, d.Tins[2].Target.Seconds(), seen["tin2_target_seconds"])
	require.Equal(t, float64(d.Tins[0].Quantum), seen["tin0_quantum_bytes"])
	var pk uint64
	for _, tn := range d.Tins[:d.NumTins] {
		pk += tn.Packets
	}
	require.Equal(t, uint64(100), pk)
	require.Equal(t, 99, q.Len())
	// Stopping early is honoured.
	n := 0
	for range d.metrics() {
		n++
		if n == 3 {
			break
		}
	}
	require.Equal(t, 3, n)
}

// TestMemoryBytes protects the reported preallocation: it grows with
// LimitPackets and the ACK filter, and the default stays near a few MiB.
func TestMemoryBytes(t *testing.T) {
	a, _ := New[int](Config{Seed: 1}, nil)
	b, _ := New[int](Config{Seed: 1, LimitPackets: 100000}, nil)
	c, _ := New[int](Config{Seed: 1, LimitPackets: 100000, ACKFilter: ACKFilterConservative}, nil)
	da, db, dc := a.Detail().MemoryBytes, b.Detail().MemoryBytes, c.Detail().MemoryBytes
	require.Less(t, da, 4<<20)
	require.Greater(t, db, da+100000*32)
	require.Greater(t, dc, db+100000*50)
}

// TestFlowStats protects the per-flow view: it finds the queue a flow
// uses, its backlog and state, and reports unknown flows as absent.
func TestFlowStats(t *testing.T) {
	q, _ := New[int](Config{Seed: 1, TinMode: DiffServ4}, nil)
	info := Info{SrcHost: 1, DstHost: 2, DSCP: 46}
	for range 5 {
		q.EnqueueInfo(pkt(300, 77), info, ms)
	}
	fs, ok := q.Flow(77, info)
	require.True(t, ok)
	require.Equal(t, 3, fs.Tin)
	require.Equal(t, 5, fs.Packets)
	require.Equal(t, 1500, fs.Bytes)
	require.Equal(t, FlowSparse, fs.State)
	require.Equal(t, "sparse", fs.State.String())
	require.Positive(t, fs.Deficit)
	_, ok = q.Flow(78, info)
	require.False(t, ok)
	for range 5 {
		q.Dequeue(2 * ms)
	}
	fs, _ = q.Flow(77, info)
	require.Equal(t, 0, fs.Packets)
	require.Equal(t, q.Detail().Tins[3].WayMiss, uint64(1))
}
