package fq

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const nqbT0 = aqm.Time(time.Second)

// TestCoDelCEThresholdNQB protects CEThresholdNQB on FQ-CoDel: with
// CEThreshold 1 ms and CEThresholdECT1Only, an ECT(0) packet that arrived
// through EnqueueDSCP with DSCP 45 and leaves 2 ms later (below Target) is
// marked CE with the option and not without; ECT(1) and CE are marked
// either way; a Not-ECT NQB packet never is; other DSCPs and plain Enqueue
// select on ECN alone; at the threshold nothing is marked; no packet leaves
// with a bit above the ECN field.
func TestCoDelCEThresholdNQB(t *testing.T) {
	cases := []struct {
		ecn     aqm.ECN
		dscp    uint8
		off, on aqm.ECN
		plain   bool // through Enqueue, which sees no DSCP
	}{
		{ecn: aqm.ECT0, dscp: aqm.DSCPNQB, off: aqm.ECT0, on: aqm.CE},
		{ecn: aqm.ECT1, dscp: aqm.DSCPNQB, off: aqm.CE, on: aqm.CE},
		{ecn: aqm.CE, dscp: aqm.DSCPNQB, off: aqm.CE, on: aqm.CE},
		{ecn: aqm.NotECT, dscp: aqm.DSCPNQB, off: aqm.NotECT, on: aqm.NotECT},
		{ecn: aqm.ECT0, dscp: 0, off: aqm.ECT0, on: aqm.ECT0},
		{ecn: aqm.ECT0, dscp: 46, off: aqm.ECT0, on: aqm.ECT0},
		{ecn: aqm.ECT1, dscp: 0, off: aqm.CE, on: aqm.CE},
		{ecn: aqm.ECT0, plain: true, off: aqm.ECT0, on: aqm.ECT0},
		{ecn: aqm.ECT0 | 0xfc, dscp: aqm.DSCPNQB, off: aqm.ECT0, on: aqm.CE},
		{ecn: aqm.NotECT | 0xfc, dscp: aqm.DSCPNQB, off: aqm.NotECT, on: aqm.NotECT},
	}
	for _, on := range []bool{false, true} {
		for _, below := range []bool{false, true} {
			for i, c := range cases {
				q, err := NewCoDel[int](CoDelConfig{Seed: 1, Control: codel.Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true, CEThresholdNQB: on}}, nil)
				require.NoError(t, err)
				// A second flow's packet first, so that the packet under test
				// does not sit in the first node.
				require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: -1, Meta: aqm.Meta{Size: 100, Hash: 7}}, nqbT0))
				p := aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, Hash: 1, ECN: c.ecn}}
				if c.plain {
					require.Equal(t, aqm.Enqueued, q.Enqueue(p, nqbT0))
				} else {
					require.Equal(t, aqm.Enqueued, q.EnqueueDSCP(p, c.dscp, nqbT0))
				}
				at, want := nqbT0+aqm.Time(2*time.Millisecond), c.off
				if on {
					want = c.on
				}
				if below {
					at, want = nqbT0+aqm.Time(time.Millisecond), c.ecn&aqm.ECNMask
				}
				for range 2 {
					out, ok := q.Dequeue(at)
					require.True(t, ok)
					if out.Payload == i {
						assert.Equal(t, want, out.ECN, "on=%v below=%v case %d", on, below, i)
					} else {
						assert.Equal(t, aqm.NotECT, out.ECN)
					}
				}
				marks := uint64(0)
				if want == aqm.CE && !below {
					marks = 1 // a CE arrival counts too, as in Linux's ce_mark
				}
				assert.Equal(t, marks, q.Detail().MarkedCEThreshold, "on=%v below=%v case %d", on, below, i)
			}
		}
	}
}

// TestCoDelNQBReconfigure protects the selection bit across Reconfigure,
// on both of its paths (flows kept, and a new table the packets are
// re-hashed into): queued NQB packets stay selected while the option holds
// and lose the selection, and the bit, when the threshold, the selector or
// the option goes.
func TestCoDelNQBReconfigure(t *testing.T) {
	base := CoDelConfig{Seed: 3, Control: codel.Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true, CEThresholdNQB: true}}
	for _, tc := range []struct {
		name string
		next func(CoDelConfig) CoDelConfig
		want aqm.ECN
	}{
		{"kept", func(c CoDelConfig) CoDelConfig { c.CEThreshold = 500 * time.Microsecond; return c }, aqm.CE},
		{"no-threshold", func(c CoDelConfig) CoDelConfig { c.CEThreshold = 0; return c }, aqm.ECT0},
		{"no-selector", func(c CoDelConfig) CoDelConfig { c.CEThresholdECT1Only = false; return c }, aqm.CE},
		{"no-nqb", func(c CoDelConfig) CoDelConfig { c.CEThresholdNQB = false; return c }, aqm.ECT0},
	} {
		for _, rehash := range []bool{false, true} {
			q, err := NewCoDel[int](base, nil)
			require.NoError(t, err)
			for i := range 8 {
				q.EnqueueDSCP(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, Hash: uint32(i % 3), ECN: aqm.ECT0}}, aqm.DSCPNQB, nqbT0)
			}
			next := tc.next(base)
			if rehash {
				next.Flows = 16
			}
			require.NoError(t, q.Reconfigure(next))
			for i := range 8 {
				p, ok := q.Dequeue(nqbT0 + aqm.Time(2*time.Millisecond))
				require.True(t, ok)
				assert.Equal(t, tc.want, p.ECN, "%s rehash=%v packet %d (%d)", tc.name, rehash, p.Payload, i)
			}
		}
	}
}

// TestCoDelPropertyNQBNoStrayBits protects the selection bit's confinement
// on random traces of EnqueueDSCP, Enqueue, EnqueueBatch, Dequeue,
// DequeueBatch and Reconfigure (the option, the selector, the threshold
// and the flow count changed) over small limits that force overload drops
// and many hashes that wake the flood guard, with stray bits on arrival:
// no packet reaches the caller or the DropFunc with a bit above the ECN
// field or with an ECN change other than an ECN-capable one to CE; every
// packet leaves exactly once; and with DisableECN (only the CE threshold
// marks) a packet leaves CE exactly when it arrived CE or was selected
// (ECT(1), or ECT(0) with DSCP 45 while the option held) and waited
// longer than the threshold in effect.
func TestCoDelPropertyNQBNoStrayBits(t *testing.T) {
	props := gopter.NewProperties(proptest.Parameters(t, 9956, 120, 20))
	props.Property("no stray ECN bits; CE exactly as the selector says", prop.ForAll(func(seed uint64) bool {
		r := rand.New(rand.NewPCG(seed, 45))
		type info struct {
			ecn aqm.ECN
			sel bool
			at  aqm.Time
		}
		queued := map[int]*info{}
		ok := true
		fail := func(format string, args ...any) {
			if ok {
				t.Logf("seed %d: "+format, append([]any{seed}, args...)...)
			}
			ok = false
		}
		check := func(p aqm.Packet[int], how string) *info {
			if p.ECN&^aqm.ECNMask != 0 {
				fail("%s packet %d has stray ECN bits %#x", how, p.Payload, uint8(p.ECN))
			}
			in := queued[p.Payload]
			if in == nil {
				fail("%s packet %d not queued", how, p.Payload)
				return nil
			}
			delete(queued, p.Payload)
			if p.ECN != in.ecn && !(p.ECN == aqm.CE && in.ecn.Capable()) {
				fail("%s packet %d: ECN %v became %v", how, p.Payload, in.ecn, p.ECN)
			}
			return in
		}
		cfg := CoDelConfig{
			Seed: seed | 1, Flows: 1 + r.IntN(64), LimitPackets: 3 + r.IntN(60), MemoryLimitBytes: 3000 + r.IntN(20000),
			QuantumBytes: 256 + r.IntN(1500), DropBatchPackets: 1 + r.IntN(8), GlobalBacklogGuard: r.IntN(2) == 0,
			DisableFloodGuard: r.IntN(3) == 0,
			Control: codel.Control{
				Target: time.Duration(1+r.IntN(3000)) * time.Microsecond, Interval: 5 * time.Millisecond,
				MTUBytes: 200, DisableECN: r.IntN(2) == 0,
				CEThreshold: time.Duration(r.IntN(2000)) * time.Microsecond, CEThresholdECT1Only: r.IntN(4) != 0, CEThresholdNQB: r.IntN(4) != 0,
			},
		}
		q, err := NewCoDel(cfg, func(p aqm.Packet[int], _ aqm.Verdict) { check(p, "dropped") })
		if err != nil {
			t.Logf("NewCoDel: %v", err)
			return false
		}
		deliver := func(p aqm.Packet[int], now aqm.Time) {
			in := check(p, "dequeued")
			c := q.Config()
			if in == nil || !c.DisableECN {
				return // CoDel may mark too
			}
			th := c.CEThreshold
			wantCE := in.ecn == aqm.CE || th > 0 && now.Sub(in.at) > th && in.ecn.Capable() &&
				(!c.CEThresholdECT1Only || in.ecn&aqm.ECT1 != 0 || in.sel)
			if (p.ECN == aqm.CE) != wantCE {
				fail("packet %d (%v, selected %v, sojourn %v, threshold %v) left %v", p.Payload, in.ecn, in.sel, now.Sub(in.at), th, p.ECN)
			}
		}
		now := nqbT0
		seq := 0
		arrival := func() (aqm.Packet[int], uint8) {
			seq++
			dscp := uint8(r.IntN(64))
			if r.IntN(2) == 0 {
				dscp = aqm.DSCPNQB
			}
			h := uint32(r.IntN(6))
			if r.IntN(4) == 0 {
				h = r.Uint32() // a fresh hash: the flood guard's business
			}
			return aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{Size: uint32(40 + r.IntN(1400)), Hash: h, ECN: aqm.ECN(r.IntN(256))}}, dscp
		}
		note := func(p aqm.Packet[int], dscp uint8, dscpSeen bool) {
			e := p.ECN & aqm.ECNMask
			queued[p.Payload] = &info{ecn: e, at: now, sel: dscpSeen && dscp == aqm.DSCPNQB && e.Capable() && q.Config().SelectsNQB()}
		}
		for range 500 {
			now += aqm.Time(r.IntN(300)) * aqm.Time(time.Microsecond)
			switch k := r.IntN(20); {
			case k < 9:
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
				// Noted first: an overload inside the burst may drop one of
				// them before the burst returns.
				for i := range ps {
					note(ps[i], 0, false)
				}
				q.EnqueueBatch(ps, vs, now)
				for i, v := range vs {
					if !v.Accepted() {
						delete(queued, ps[i].Payload)
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
				next.Seed = 0 // keep the key
				switch r.IntN(4) {
				case 0:
					next.CEThresholdNQB = !next.CEThresholdNQB
				case 1:
					next.CEThresholdECT1Only = !next.CEThresholdECT1Only
				case 2:
					next.CEThreshold = time.Duration(r.IntN(2)*r.IntN(2000)) * time.Microsecond
				default:
					next.Flows = 1 + r.IntN(64)
				}
				was := q.Config().SelectsNQB()
				if err := q.Reconfigure(next); err != nil {
					fail("Reconfigure: %v", err)
				}
				if was && !q.Config().SelectsNQB() {
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

// nqbCoDel offers every packet through EnqueueDSCP, with DSCP 45 for even
// hashes, so that the kit's checks (stray ECN bits, the ECN rules, drops,
// overload, bursts, Reconfigure) cover the NQB selection bit. Its burst
// enqueue is the loop of single calls; DequeueBatch is the queue's own.
type nqbCoDel struct{ *CoDel[uint64] }

func (q nqbCoDel) Enqueue(p aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	dscp := uint8(0)
	if p.Hash%2 == 0 {
		dscp = aqm.DSCPNQB
	}
	return q.EnqueueDSCP(p, dscp, now)
}

func (q nqbCoDel) EnqueueBatch(ps []aqm.Packet[uint64], vs []aqm.Verdict, now aqm.Time) int {
	return aqm.EnqueueLoop[uint64](q, ps, vs, now)
}

// nqbCoDelFactory is coDelFactory through nqbCoDel; its Reconfigure
// cycle also drops the threshold and the option and changes the flow
// count, so that queued packets lose their selection under traffic, on
// both of Reconfigure's paths.
func nqbCoDelFactory(cfg CoDelConfig) aqmtest.Factory {
	f := coDelFactory(cfg)
	f.New = func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		cfg := cfg
		cfg.Seed = seed
		q, err := NewCoDel(cfg, onDrop)
		if err != nil {
			return nil, err
		}
		return nqbCoDel{q}, nil
	}
	f.Reconfigure = func(q aqm.Queue[uint64], i int) error {
		inner := q.(nqbCoDel).CoDel
		next := cfg
		next.Seed = inner.cfg.Seed
		switch i % 4 {
		case 0:
			next.CEThreshold = 0
		case 1:
			next.CEThresholdNQB = false
			next.Flows = max(1, cfg.Flows/2)
		case 2:
			next.Target, next.Interval = time.Microsecond, 30*time.Microsecond
		}
		return inner.Reconfigure(next)
	}
	return f
}

// TestConformanceCoDelNQB protects the aqm.Queue contract of FQ-CoDel with
// CEThresholdNQB, every packet offered through EnqueueDSCP, checked by the
// shared kit: a roomy and a small, aggressive configuration.
func TestConformanceCoDelNQB(t *testing.T) {
	for name, cfg := range map[string]CoDelConfig{
		"nqb":       {Flows: 64, Control: codel.Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true, CEThresholdNQB: true}},
		"nqb-small": {Flows: 4, LimitPackets: 8, MemoryLimitBytes: 6000, QuantumBytes: 256, DropBatchPackets: 3, Control: codel.Control{Target: time.Microsecond, Interval: 20 * time.Microsecond, CEThreshold: time.Microsecond, CEThresholdECT1Only: true, CEThresholdNQB: true, DisableECN: true}},
	} {
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, nqbCoDelFactory(cfg)) })
	}
}
