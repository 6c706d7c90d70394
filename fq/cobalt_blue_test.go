package fq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestCobaltPolicesECNFlowsThatIgnoreMarks protects BLUE's reason to exist
// in FQ-COBALT: 32 thin ECN-capable flows that ignore CE marks, together at
// 1.25 times the link rate, soon have every packet marked by their CoDel
// halves; BLUE must still drop them, marked or not, so that their sojourn
// time stays far below the queue's standing delay at its limit, with each
// flow losing about its share of the excess.
func TestCobaltPolicesECNFlowsThatIgnoreMarks(t *testing.T) {
	const (
		flows   = 32
		pkt     = 1500
		service = 1200 * time.Microsecond // 10 Mb/s
		arrival = 960 * time.Microsecond  // 12.5 Mb/s in all, round robin
		run     = 20 * time.Second
		settle  = 5 * time.Second
	)
	var dropped [flows]int
	q, err := NewCobalt(CobaltConfig{Seed: 1}, func(p aqm.Packet[int], _ aqm.Verdict) { dropped[p.Payload]++ })
	require.NoError(t, err)
	// One flow queue per flow: hashes whose buckets differ.
	var hashes [flows]uint32
	used := map[int]bool{}
	for f, h := 0, uint32(1); f < flows; h++ {
		if b := flowState(q.Flow(h)).Bucket; !used[b] {
			used[b], hashes[f] = true, h
			f++
		}
	}
	start := aqm.Time(time.Second)
	now := start
	nextArr, nextSrv := now, now
	var sojourn [flows]time.Duration
	var sent, offered [flows]int
	turn := 0
	for now < start+aqm.Time(run) {
		if nextArr <= nextSrv {
			now = nextArr
			f := turn % flows
			turn++
			q.Enqueue(aqm.Packet[int]{Payload: f, Meta: aqm.Meta{Size: pkt, Hash: hashes[f], ECN: aqm.ECT0}}, now)
			offered[f]++
			nextArr += aqm.Time(arrival)
			continue
		}
		now = nextSrv
		nextSrv += aqm.Time(service)
		p, ok := q.Dequeue(now)
		if ok && now >= start+aqm.Time(settle) {
			sojourn[p.Payload] += p.Enqueued.Since(now)
			sent[p.Payload]++
		}
	}
	s := q.Stats()
	t.Logf("BLUE drops %d, CoDel marks %d, refused %d", q.Detail().DroppedBlue, s.Marked.Packets, s.DroppedOverlimit.Packets)
	for f := range flows {
		require.Positive(t, sent[f])
		mean := sojourn[f] / time.Duration(sent[f])
		t.Logf("flow %d: mean sojourn %v over the last %v, %d dropped of %d", f, mean, run-settle, dropped[f], offered[f])
		require.Less(t, mean, 250*time.Millisecond, "flow %d", f)
		// Each flow offers 1.25 times its share: BLUE takes about a
		// fifth of every flow, not the whole excess of a few.
		require.Greater(t, dropped[f], offered[f]/10, "flow %d", f)
	}
}
