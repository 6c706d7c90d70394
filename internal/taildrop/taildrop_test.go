package taildrop_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/taildrop"
)

// TestEnqueueBatchLimits protects the shared tail-drop burst: each packet
// is refused exactly when its segments or bytes would pass a limit, the
// hook hears every refusal, accepted packets are stamped and keep only the
// ECN bits, and the counters add up to the verdicts.
func TestEnqueueBatchLimits(t *testing.T) {
	r := ring.New[aqm.Packet[int]](8)
	var st aqm.Stats
	segs, backlog := 0, 0
	q := taildrop.Queue[int]{Ring: r, Stats: &st, Segs: &segs, Backlog: &backlog, LimitPackets: 5, LimitBytes: 1000}
	ps := []aqm.Packet[int]{
		{Payload: 0, Meta: aqm.Meta{Size: 300, ECN: aqm.CE | 0x10}},
		{Payload: 1, Meta: aqm.Meta{Size: 800}},              // bytes: 1100 > 1000
		{Payload: 2, Meta: aqm.Meta{Size: 300, Segments: 3}}, // 4 wire packets, 600 bytes
		{Payload: 3, Meta: aqm.Meta{Size: 100, Segments: 2}}, // 6 > 5 wire packets
		{Payload: 4, Meta: aqm.Meta{Size: 400}},              // 5 wire packets, 1000 bytes
		{Payload: 5, Meta: aqm.Meta{Size: 1}},                // full
	}
	vs := make([]aqm.Verdict, len(ps)+2) // longer than ps: only len(ps) are offered
	refusals := 0
	n := taildrop.EnqueueBatch(q, ps, vs, 77, func() { refusals++ })
	want := []aqm.Verdict{aqm.Enqueued, aqm.DroppedOverlimit, aqm.Enqueued, aqm.DroppedOverlimit, aqm.Enqueued, aqm.DroppedOverlimit}
	for i, v := range want {
		if vs[i] != v {
			t.Fatalf("verdict %d = %v, want %v", i, vs[i], v)
		}
	}
	if n != 3 || refusals != 3 || r.Len() != 3 || segs != 5 || backlog != 1000 {
		t.Fatalf("accepted %d, refusals %d, ring %d, segs %d, backlog %d; want 3, 3, 3, 5, 1000", n, refusals, r.Len(), segs, backlog)
	}
	if st.Enqueued != (aqm.Count{Packets: 5, Bytes: 1000}) || st.DroppedOverlimit.Packets != 4 || st.MaxSize != 800 {
		t.Fatalf("stats %+v", st)
	}
	p, _ := r.PopFront()
	if p.Payload != 0 || p.ECN != aqm.CE || p.Enqueued != 77 {
		t.Fatalf("first packet %+v, want payload 0, CE only, stamped 77", p)
	}
}
