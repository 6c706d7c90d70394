package codel

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nqbCase is one packet of the NQB step tables: its ECN field and DSCP on
// arrival, and the ECN it must leave with above the CE threshold with
// CEThresholdNQB off and on.
type nqbCase struct {
	ecn      aqm.ECN
	dscp     uint8
	off, on  aqm.ECN
	viaPlain bool // offered through Enqueue, which sees no DSCP
}

// nqbCases: ECT(0) with DSCP 45 is the one the option changes; ECT(1) and
// CE are marked either way, Not-ECT never, other DSCPs and plain Enqueue
// select on ECN alone.
var nqbCases = []nqbCase{
	{ecn: aqm.ECT0, dscp: aqm.DSCPNQB, off: aqm.ECT0, on: aqm.CE},
	{ecn: aqm.ECT1, dscp: aqm.DSCPNQB, off: aqm.CE, on: aqm.CE},
	{ecn: aqm.CE, dscp: aqm.DSCPNQB, off: aqm.CE, on: aqm.CE},
	{ecn: aqm.NotECT, dscp: aqm.DSCPNQB, off: aqm.NotECT, on: aqm.NotECT},
	{ecn: aqm.ECT0, dscp: 0, off: aqm.ECT0, on: aqm.ECT0},
	{ecn: aqm.ECT0, dscp: 46, off: aqm.ECT0, on: aqm.ECT0},
	{ecn: aqm.ECT0, dscp: 44, off: aqm.ECT0, on: aqm.ECT0},
	{ecn: aqm.ECT1, dscp: 0, off: aqm.CE, on: aqm.CE},
	{ecn: aqm.ECT0, viaPlain: true, off: aqm.ECT0, on: aqm.ECT0},
	{ecn: aqm.ECT0 | 0xfc, dscp: aqm.DSCPNQB, off: aqm.ECT0, on: aqm.CE}, // stray bits in, none out
	{ecn: aqm.NotECT | 0xfc, dscp: aqm.DSCPNQB, off: aqm.NotECT, on: aqm.NotECT},
}

// TestQueueCEThresholdNQB protects CEThresholdNQB on the CoDel queue: with
// CEThreshold 1 ms and CEThresholdECT1Only, an ECT(0) packet that arrived
// through EnqueueDSCP with DSCP 45 and leaves 2 ms later is marked CE with
// the option and not without; ECT(1) and CE are marked either way; a
// Not-ECT NQB packet never is; at or below the threshold nothing is; no
// packet leaves with a bit above the ECN field.
func TestQueueCEThresholdNQB(t *testing.T) {
	for _, on := range []bool{false, true} {
		for _, below := range []bool{false, true} {
			for i, c := range nqbCases {
				q, err := New[int](Config{Control: Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true, CEThresholdNQB: on}}, nil)
				require.NoError(t, err)
				p := aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, ECN: c.ecn}}
				if c.viaPlain {
					require.Equal(t, aqm.Enqueued, q.Enqueue(p, t0))
				} else {
					require.Equal(t, aqm.Enqueued, q.EnqueueDSCP(p, c.dscp, t0))
				}
				at, want := ms(2), c.off // above the threshold, below Target
				if on {
					want = c.on
				}
				if below {
					at, want = ms(1), c.ecn&aqm.ECNMask // exactly the threshold: not above
				}
				out, ok := q.Dequeue(at)
				require.True(t, ok)
				assert.Equal(t, want, out.ECN, "on=%v below=%v case %d %+v", on, below, i, c)
				marks := uint64(0)
				if want == aqm.CE && !below {
					marks = 1 // a CE arrival counts too, as in Linux's ce_mark
				}
				assert.Equal(t, marks, q.Detail().MarkedCEThreshold, "on=%v below=%v case %d", on, below, i)
			}
		}
	}
}

// TestControlSelectsNQB protects the conditions of the selector: it needs
// CEThreshold and CEThresholdECT1Only as well as CEThresholdNQB, and
// without it SelectDSCP only masks the ECN field.
func TestControlSelectsNQB(t *testing.T) {
	for mask := range 8 {
		c := Control{CEThresholdNQB: mask&1 != 0, CEThresholdECT1Only: mask&2 != 0}
		if mask&4 != 0 {
			c.CEThreshold = time.Millisecond
		}
		assert.Equal(t, mask == 7, c.SelectsNQB(), "%+v", c)
		p := c.Params()
		for e := range aqm.ECN(4) {
			got := p.SelectDSCP(e|0x7c, aqm.DSCPNQB)
			want := e
			if mask == 7 && e != aqm.NotECT {
				want |= nqbSelected
			}
			assert.Equal(t, want, got, "%+v ecn %v", c, e)
			assert.Equal(t, e, p.SelectDSCP(e|0x7c, 0), "%+v ecn %v dscp 0", c, e)
		}
	}
}

// TestQueueNQBReconfigure protects the selection bit across Reconfigure:
// queued NQB packets selected under the option stay selected while it
// holds, and lose the selection (and the bit) when CEThreshold, the
// selector or the option goes, even on the fast paths that no longer look
// at the ECN field.
func TestQueueNQBReconfigure(t *testing.T) {
	base := Config{Control: Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true, CEThresholdNQB: true}}
	for _, tc := range []struct {
		name string
		next func(Config) Config
		want aqm.ECN
	}{
		{"kept", func(c Config) Config { c.CEThreshold = 500 * time.Microsecond; return c }, aqm.CE},
		{"no-threshold", func(c Config) Config { c.CEThreshold = 0; return c }, aqm.ECT0},
		{"no-selector", func(c Config) Config { c.CEThresholdECT1Only = false; return c }, aqm.CE}, // every ECT eligible
		{"no-nqb", func(c Config) Config { c.CEThresholdNQB = false; return c }, aqm.ECT0},
	} {
		for _, batch := range []bool{false, true} {
			q, err := New[int](base, nil)
			require.NoError(t, err)
			for i := range 4 {
				q.EnqueueDSCP(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, ECN: aqm.ECT0}}, aqm.DSCPNQB, t0)
			}
			require.NoError(t, q.Reconfigure(tc.next(base)))
			buf := make([]aqm.Packet[int], 4)
			if batch {
				require.Equal(t, 4, q.DequeueBatch(buf, ms(2)))
			} else {
				for i := range buf {
					var ok bool
					buf[i], ok = q.Dequeue(ms(2))
					require.True(t, ok)
				}
			}
			for _, p := range buf {
				assert.Equal(t, tc.want, p.ECN, "%s batch=%v packet %d", tc.name, batch, p.Payload)
			}
		}
	}
}

// TestQueuePropertyNQBNoStrayBits protects the selection bit's confinement
// on random traces of EnqueueDSCP, Enqueue, EnqueueBatch, Dequeue,
// DequeueBatch and Reconfigure (the option, the selector and the threshold
// toggled), with stray bits on arrival and aggressive CoDel settings: no
// packet reaches the caller or the DropFunc with a bit above the ECN field,
// Not-ECT packets are never marked, and with DisableECN (so that only the
// CE threshold marks) a packet leaves CE exactly when it arrived CE or was
// selected (ECT(1), or ECT(0) with DSCP 45 while the option held) and
// waited longer than the threshold in effect.
func TestQueuePropertyNQBNoStrayBits(t *testing.T) {
	props := gopter.NewProperties(proptest.Parameters(t, 9956, 150, 20))
	props.Property("no stray ECN bits; CE exactly as the selector says", prop.ForAll(func(seed uint64) bool {
		r := rand.New(rand.NewPCG(seed, 45))
		type info struct {
			ecn aqm.ECN
			sel bool // selected for the CE threshold as queued
			at  aqm.Time
		}
		queued := map[int]*info{}
		ok := true
		fail := func(format string, args ...any) {
			if ok {
				t.Logf(format, args...)
			}
			ok = false
		}
		check := func(p aqm.Packet[int], how string) {
			if p.ECN&^aqm.ECNMask != 0 {
				fail("%s packet %d has stray ECN bits %#x", how, p.Payload, uint8(p.ECN))
			}
			in := queued[p.Payload]
			if in == nil {
				fail("%s packet %d not queued", how, p.Payload)
				return
			}
			if p.ECN != in.ecn && !(p.ECN == aqm.CE && in.ecn.Capable()) {
				fail("%s packet %d: ECN %v became %v", how, p.Payload, in.ecn, p.ECN)
			}
		}
		cfg := Config{LimitPackets: 3 + r.IntN(40), Control: Control{
			Target: time.Duration(1+r.IntN(3000)) * time.Microsecond, Interval: 5 * time.Millisecond,
			MTUBytes: 200, DisableECN: r.IntN(2) == 0,
			CEThreshold: time.Duration(r.IntN(2000)) * time.Microsecond, CEThresholdECT1Only: r.IntN(4) != 0, CEThresholdNQB: r.IntN(4) != 0,
		}}
		q, err := New(cfg, func(p aqm.Packet[int], _ aqm.Verdict) {
			check(p, "dropped")
			delete(queued, p.Payload)
		})
		if err != nil {
			t.Logf("New: %v", err)
			return false
		}
		deliver := func(p aqm.Packet[int], now aqm.Time) {
			check(p, "dequeued")
			in := queued[p.Payload]
			if in == nil {
				return
			}
			delete(queued, p.Payload)
			th := q.p.ceThreshold
			if !q.cfg.DisableECN || !ok {
				return // CoDel may mark too
			}
			wantCE := in.ecn == aqm.CE || th > 0 && int64(now.Sub(in.at)) > th && in.ecn.Capable() &&
				(!q.cfg.CEThresholdECT1Only || in.ecn&aqm.ECT1 != 0 || in.sel)
			if (p.ECN == aqm.CE) != wantCE {
				fail("packet %d (%v, selected %v, sojourn %v, threshold %v) left %v", p.Payload, in.ecn, in.sel, now.Sub(in.at), time.Duration(th), p.ECN)
			}
		}
		now := t0
		seq := 0
		arrival := func() (aqm.Packet[int], uint8) {
			seq++
			dscp := uint8(r.IntN(64))
			if r.IntN(2) == 0 {
				dscp = aqm.DSCPNQB
			}
			return aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{Size: uint32(40 + r.IntN(300)), ECN: aqm.ECN(r.IntN(256))}}, dscp
		}
		note := func(p aqm.Packet[int], dscp uint8, dscpSeen bool) {
			e := p.ECN & aqm.ECNMask
			queued[p.Payload] = &info{ecn: e, at: now, sel: dscpSeen && dscp == aqm.DSCPNQB && e.Capable() && q.cfg.SelectsNQB()}
		}
		for range 400 {
			now += aqm.Time(r.IntN(400)) * aqm.Time(time.Microsecond)
			switch k := r.IntN(20); {
			case k < 8:
				p, dscp := arrival()
				if q.EnqueueDSCP(p, dscp, now).Accepted() {
					note(p, dscp, true)
				}
			case k < 10:
				p, dscp := arrival()
				if q.Enqueue(p, now).Accepted() {
					note(p, dscp, false)
				}
			case k < 11:
				ps := make([]aqm.Packet[int], 1+r.IntN(6))
				vs := make([]aqm.Verdict, len(ps))
				for i := range ps {
					ps[i], _ = arrival()
				}
				q.EnqueueBatch(ps, vs, now)
				for i, v := range vs {
					if v.Accepted() {
						note(ps[i], 0, false)
					}
				}
			case k < 16:
				if p, got := q.Dequeue(now); got {
					deliver(p, now)
				}
			case k < 18:
				buf := make([]aqm.Packet[int], 1+r.IntN(8))
				n := q.DequeueBatch(buf, now)
				for _, p := range buf[:n] {
					deliver(p, now)
				}
			default:
				next := q.Config()
				switch r.IntN(3) {
				case 0:
					next.CEThresholdNQB = !next.CEThresholdNQB
				case 1:
					next.CEThresholdECT1Only = !next.CEThresholdECT1Only
				default:
					next.CEThreshold = time.Duration(r.IntN(2)*r.IntN(2000)) * time.Microsecond
				}
				was := q.cfg.SelectsNQB()
				if err := q.Reconfigure(next); err != nil {
					fail("Reconfigure: %v", err)
				}
				if was && !q.cfg.SelectsNQB() {
					for _, in := range queued {
						in.sel = false
					}
				}
			}
		}
		for p, got := q.Dequeue(now); got; p, got = q.Dequeue(now) {
			deliver(p, now)
		}
		if len(queued) != 0 {
			fail("%d packets neither dequeued nor dropped", len(queued))
		}
		return ok
	}, gen.UInt64()))
	props.TestingRun(t)
}
