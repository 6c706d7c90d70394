package keyed_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/keyed"
)

// slowKeyed is deficit round robin written plainly from its definition
// (Shreedhar and Varghese, 1995) over per-key tail-drop FIFOs, with the
// key bound and idle reclamation as Config documents them: slices
// and maps, no links, no heap.
type slowKeyed struct {
	limit, maxKeys int
	quantum        int
	idleTime       time.Duration
	queue          map[uint32][]aqm.Packet[uint64]
	deficit        map[uint32]int
	active         []uint32 // round-robin order
	idle           []uint32 // idlest first
	since          map[uint32]aqm.Time
}

func newSlowKeyed(limit, maxKeys int, idle time.Duration) *slowKeyed {
	return &slowKeyed{limit: limit, maxKeys: maxKeys, quantum: keyed.DefaultQuantumBytes, idleTime: idle,
		queue: map[uint32][]aqm.Packet[uint64]{}, deficit: map[uint32]int{}, since: map[uint32]aqm.Time{}}
}

// reclaim lets go of up to two keys idle for idleTime at now.
func (m *slowKeyed) reclaim(now aqm.Time) {
	for range 2 {
		if len(m.idle) == 0 || now.Sub(m.since[m.idle[0]]) < m.idleTime {
			return
		}
		m.forget(m.idle[0])
	}
}

func (m *slowKeyed) forget(k uint32) {
	m.idle = slices.DeleteFunc(m.idle, func(x uint32) bool { return x == k })
	delete(m.queue, k)
	delete(m.deficit, k)
	delete(m.since, k)
}

func (m *slowKeyed) enqueue(p aqm.Packet[uint64], now aqm.Time) bool {
	m.reclaim(now)
	k := p.Hash
	if _, ok := m.queue[k]; !ok {
		if len(m.queue) == m.maxKeys {
			if len(m.idle) == 0 {
				return false
			}
			m.forget(m.idle[0])
		}
		m.queue[k] = nil
		m.deficit[k] = m.quantum
		m.idle = append(m.idle, k)
		m.since[k] = now
	}
	if len(m.queue[k]) == m.limit {
		return false
	}
	if len(m.queue[k]) == 0 {
		m.idle = slices.DeleteFunc(m.idle, func(x uint32) bool { return x == k })
		m.deficit[k] = min(m.deficit[k], m.quantum)
		m.active = append(m.active, k)
	}
	m.queue[k] = append(m.queue[k], p)
	return true
}

func (m *slowKeyed) dequeue(now aqm.Time) (aqm.Packet[uint64], bool) {
	m.reclaim(now)
	for len(m.active) > 0 {
		k := m.active[0]
		if m.deficit[k] <= 0 {
			m.deficit[k] += m.quantum
			m.active = append(m.active[1:], k)
			continue
		}
		p := m.queue[k][0]
		m.queue[k] = m.queue[k][1:]
		m.deficit[k] -= int(p.Size)
		if len(m.queue[k]) == 0 {
			m.active = m.active[1:]
			m.idle = append(m.idle, k)
			m.since[k] = now
		}
		return p, true
	}
	return aqm.Packet[uint64]{}, false
}

// TestReference protects the scheduler against the slow model: on
// random traces over 20 keys with a bound of 8, small FIFOs and idle
// reclamation, every verdict, every dequeued packet and the number of
// keys agree.
func TestReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	for trace := range 50 {
		idle := time.Duration(1+rng.IntN(10)) * time.Millisecond
		k := newKeyedFIFO(t, 6, keyed.Config{MaxKeys: 8, IdleTime: idle})
		m := newSlowKeyed(6, 8, idle)
		now := aqm.Time(1)
		for op := range 3000 {
			now = now.Add(time.Duration(rng.IntN(400)) * time.Microsecond)
			if rng.IntN(100) < 55 {
				p := kpkt(uint64(op), uint32(rng.IntN(20)), uint32(64+rng.IntN(1437)))
				require.Equal(t, m.enqueue(p, now), k.Enqueue(p, now).Accepted(), "trace %d op %d", trace, op)
			} else {
				want, wok := m.dequeue(now)
				got, gok := k.Dequeue(now)
				require.Equal(t, wok, gok, "trace %d op %d", trace, op)
				require.Equal(t, want.Payload, got.Payload, "trace %d op %d", trace, op)
			}
			require.Equal(t, len(m.queue), k.Keys(), "trace %d op %d", trace, op)
		}
	}
}
