package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
)

// TestTwoHostsSplitEvenly protects the gateway's point: with CAKE's
// dual-dsthost fairness, a home device with one download flow and one with
// eight, both offering more than the link takes (13.3 Mbit/s and 8 × 2
// Mbit/s, unresponsive, on a 10 Mbit/s link), each get half the link
// (within 10%), and the link runs at its rate (within 2%). The run is in
// virtual time: a manual clock, advanced to the next arrival or to the
// next departure CAKE's shaper allows, so nothing depends on timers.
func TestTwoHostsSplitEvenly(t *testing.T) {
	const (
		rate          = 10 * aqm.Mbit
		size          = 1000
		warm, measure = time.Second, 3 * time.Second
	)
	clk := clock.NewManual(clock.Epoch)
	g, err := newGateway(config{Rate: rate, Slots: 1024, Seed: 1}, clk)
	require.NoError(t, err)

	type flow struct {
		pkt   []byte
		every time.Duration
		next  aqm.Time
	}
	flows := []*flow{{pkt: udp4(server, hostA, 443, 50000, 0, size), every: 600 * time.Microsecond, next: clock.Epoch}}
	for i := range 8 {
		flows = append(flows, &flow{
			pkt:   udp4(server, hostB, 443, 50001+uint16(i), 0, size),
			every: 4 * time.Millisecond,
			next:  clock.Epoch.Add(time.Duration(i) * 500 * time.Microsecond),
		})
	}
	end := clock.Epoch.Add(warm + measure)
	var bytesTo = map[[4]byte]uint64{}
	var sent uint64
	buf := make([]aqm.Packet[uint32], 64)
	for now := clk.Now(); now.Before(end); now = clk.Now() {
		for _, f := range flows {
			for !f.next.After(now) {
				_, err := g.receive(f.pkt)
				require.NoError(t, err, "the pool never runs dry: CAKE's limit is below it")
				f.next = f.next.Add(f.every)
			}
		}
		n, wait := g.take(buf)
		for _, p := range buf[:n] {
			b := g.packet(p)
			if now.After(clock.Epoch.Add(warm)) {
				bytesTo[[4]byte(b[16:20])] += uint64(len(b))
			}
			g.release(p.Payload)
			sent++
		}
		if n == len(buf) {
			continue // more may leave at this instant
		}
		next := flows[0].next
		for _, f := range flows[1:] {
			next = min(next, f.next)
		}
		if wait > 0 {
			next = min(next, now.Add(wait))
		}
		clk.Set(next)
	}
	want := float64(rate) / 8 * measure.Seconds()
	a, b := float64(bytesTo[hostA]), float64(bytesTo[hostB])
	t.Logf("host A (1 flow) %.2f Mbit/s, host B (8 flows) %.2f Mbit/s, %d packets sent, %d dropped",
		a*8/measure.Seconds()/1e6, b*8/measure.Seconds()/1e6, sent, g.dropped)
	require.InEpsilon(t, want, a+b, 0.02, "the link runs at its rate")
	require.InEpsilon(t, want/2, a, 0.10, "host A's share")
	require.InEpsilon(t, want/2, b, 0.10, "host B's share")
	require.NotZero(t, g.dropped, "the hosts offered more than the link takes")
}

// TestDiffServ4Tins protects the classification the gateway relies on: EF
// goes to the Voice tin, CS1 to Bulk, AF41 to Video, the rest to Best
// Effort; and a packet that is not IP is refused with its buffer returned.
func TestDiffServ4Tins(t *testing.T) {
	g, err := newGateway(config{Rate: 10 * aqm.Mbit, Slots: 16, Seed: 1}, clock.NewManual(clock.Epoch))
	require.NoError(t, err)
	for _, ds := range []byte{46 << 2, 8 << 2, 34 << 2, 0} {
		v, err := g.receive(udp4(server, hostA, 1, 2, ds, 100))
		require.NoError(t, err)
		require.True(t, v.Accepted())
	}
	v, err := g.receive([]byte{0x00, 1, 2, 3})
	require.NoError(t, err)
	require.False(t, v.Accepted())
	require.Len(t, g.free, 16-4, "the refused packet's buffer is free again")
	var d cake.Detail
	g.f.WithQueue(func(aqm.Queue[uint32]) { d = g.q.Detail() })
	got := map[string]uint64{}
	for _, tin := range d.Tins[:d.NumTins] {
		got[tin.Name] = tin.Packets
	}
	require.Equal(t, map[string]uint64{"Bulk": 1, "Best Effort": 1, "Video": 1, "Voice": 1}, got)
	require.Contains(t, g.report(), "Voice: 1 pkts")
}
