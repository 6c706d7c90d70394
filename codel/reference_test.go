package codel

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// refCoDel is a slow model of CoDel written straight from the pseudocode of
// RFC 8289 section 5 (dodequeue, dequeue, control_law), independent of
// Controller: float64 square root, a slice as the queue, no Newton, no
// flags. Times are int64 ns (the RFC's time_t); the only rounding is the
// conversion of interval/sqrt(count) to whole nanoseconds (truncation).
type refCoDel struct {
	q        []refPkt
	bytes    int
	target   int64
	interval int64
	maxPkt   int // MAXPACKET

	firstAbove int64 // 0: none
	dropNext   int64
	count      uint32
	lastCount  uint32
	dropping   bool

	dropped []uint64 // ids dropped during the current dequeue
}

type refPkt struct {
	id     uint64
	size   int
	tstamp int64
}

func (r *refCoDel) enqueue(id uint64, size int, now int64) {
	r.q = append(r.q, refPkt{id, size, now})
	r.bytes += size
}

func (r *refCoDel) controlLaw(t int64, count uint32) int64 {
	return t + int64(float64(r.interval)/math.Sqrt(float64(count)))
}

// dodequeue returns the head packet (nil if empty) and ok_to_drop.
func (r *refCoDel) dodequeue(now int64) (*refPkt, bool) {
	if len(r.q) == 0 {
		r.firstAbove = 0
		return nil, false
	}
	p := r.q[0]
	r.q = r.q[1:]
	r.bytes -= p.size
	sojourn := now - p.tstamp
	okToDrop := false
	if sojourn < r.target || r.bytes <= r.maxPkt {
		r.firstAbove = 0
	} else if r.firstAbove == 0 {
		r.firstAbove = now + r.interval
	} else if now >= r.firstAbove {
		okToDrop = true
	}
	return &p, okToDrop
}

func (r *refCoDel) dequeue(now int64) *refPkt {
	r.dropped = r.dropped[:0]
	p, ok := r.dodequeue(now)
	if p == nil {
		r.dropping = false
		return nil
	}
	if r.dropping {
		if !ok {
			r.dropping = false
		}
		for now >= r.dropNext && r.dropping {
			r.dropped = append(r.dropped, p.id)
			p, ok = r.dodequeue(now)
			if !ok {
				r.dropping = false
			} else {
				r.count++
				r.dropNext = r.controlLaw(r.dropNext, r.count)
			}
		}
	} else if ok {
		r.dropped = append(r.dropped, p.id)
		p, _ = r.dodequeue(now)
		r.dropping = true
		delta := r.count - r.lastCount
		r.count = 1
		if delta > 1 && now-r.dropNext < 16*r.interval {
			r.count = delta
		}
		r.dropNext = r.controlLaw(now, r.count)
		r.lastCount = r.count
	}
	return p
}

// TestReferenceRFC8289 protects the fast Controller's agreement with the RFC
// pseudocode: on random traces of arrivals and departures that swing between
// overload and drain, every dequeue returns the same packet and drops the
// same packets, with zero tolerance (the control law is exact to the
// nanosecond, TestLawStepExact; float64 represents the traces' times and
// steps exactly, and the conversion to int64 truncates as lawStep floors).
func TestReferenceRFC8289(t *testing.T) {
	traces := 60
	if testing.Short() {
		traces = 12
	}
	decisions, drops := 0, 0
	for seed := range uint64(traces) {
		src := rng.New(seed)
		cfg := Config{Control: Control{DisableECN: true}, LimitPackets: 1 << 20}
		switch seed % 4 {
		case 1:
			cfg.Target, cfg.Interval = 2*time.Millisecond, 20*time.Millisecond
		case 2:
			cfg.MTUBytes = 512 // the RFC pseudocode's MAXPACKET
		case 3:
			cfg.Target, cfg.Interval = time.Duration(1+src.Uint64()%10_000_000), time.Duration(10_000_001+src.Uint64()%300_000_000)
		}
		var got []uint64
		q, err := New(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { got = append(got, p.Payload) })
		require.NoError(t, err)
		require.NoError(t, cfg.Validate())
		cfg = q.Config()
		ref := &refCoDel{target: int64(cfg.Target), interval: int64(cfg.Interval), maxPkt: cfg.MTUBytes}

		now := int64(time.Second)
		id := uint64(0)
		// Phases of random length alternate arrival rates above and below
		// the service rate of one dequeue per step.
		arrivalP := 0.0
		for i := range 6000 {
			if i%500 == 0 {
				arrivalP = src.Float64() * 1.6
			}
			now += int64(src.Uint64() % 2_000_000) // up to 2 ms, any nanosecond
			for arrivalP > src.Float64() {
				id++
				size := 40 + int(src.Uint64()%1500)
				q.Enqueue(aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: uint32(size)}}, aqm.Time(now))
				ref.enqueue(id, size, now)
				if src.Float64() < 0.5 {
					break
				}
			}
			got = got[:0]
			p, ok := q.Dequeue(aqm.Time(now))
			rp := ref.dequeue(now)
			require.Equalf(t, rp != nil, ok, "seed %d op %d: packet presence", seed, i)
			if ok {
				require.Equalf(t, rp.id, p.Payload, "seed %d op %d: packet", seed, i)
			}
			if len(ref.dropped) > 0 || len(got) > 0 {
				require.Equalf(t, ref.dropped, got, "seed %d op %d: drops", seed, i)
			}
			drops += len(got)
			decisions++
		}
		require.Zero(t, q.Detail().CappedDequeues, "the reference has no drop cap")
		require.Equal(t, ref.count, q.Detail().Count, "seed %d", seed)
	}
	t.Logf("%d dequeues, %d drops, all identical", decisions, drops)
	require.Greater(t, drops, traces*10, "traces must exercise the dropping state")
}
