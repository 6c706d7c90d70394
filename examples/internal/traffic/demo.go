package traffic

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"
)

// The flows a demo offers: a bulk flow at twice the link rate and a sparse
// probe beside it.
const (
	DemoBulk  = 1
	DemoProbe = 2
)

// DemoResult is what a demo measured over the second half of its run (after
// the queue has settled).
type DemoResult struct {
	BulkSent, BulkReceived   int
	ProbeSent, ProbeReceived int
	BulkBitsPerSecond        float64       // bulk payload received per second
	ProbeP50, ProbeP99       time.Duration // probe one-way delay
	ProbeCE, BulkCE          int           // received with CE
}

// Demo offers, to a relay at relay that forwards to recv, a bulk flow of
// 1000-byte datagrams at twice bitsPerSecond and a probe of one 100-byte
// datagram every 10 ms, both for d, then waits for the queue to drain and
// measures. It sends only to relay, bounded in packets and time.
func Demo(ctx context.Context, relay netip.AddrPort, recv *Receiver, bitsPerSecond float64, d time.Duration) DemoResult {
	const bulkBytes, probeBytes = 1000, 100
	bulk := Flow{ID: DemoBulk, PacketsPerSec: 2 * bitsPerSecond / 8 / bulkBytes, SizeBytes: bulkBytes}
	bulk.Count = int(bulk.PacketsPerSec * d.Seconds())
	probe := Flow{ID: DemoProbe, PacketsPerSec: 100, SizeBytes: probeBytes, Count: int(100 * d.Seconds())}
	start := Since()
	var res DemoResult
	var wg sync.WaitGroup
	wg.Go(func() { res.BulkSent, _ = Send(ctx, relay, bulk) })
	wg.Go(func() { res.ProbeSent, _ = Send(ctx, relay, probe) })
	wg.Wait()
	select { // let the queue drain: a relay's limits hold well under a second
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	samples := recv.Samples()
	half, end := start+d/2, start+d
	b := Select(samples, DemoBulk, half, end)
	p := Select(samples, DemoProbe, half, end)
	res.BulkReceived = len(Select(samples, DemoBulk, 0, 1<<62))
	res.ProbeReceived = len(Select(samples, DemoProbe, 0, 1<<62))
	bytes := 0
	for _, s := range b {
		bytes += s.Size
	}
	res.BulkBitsPerSecond = float64(8*bytes) / (d / 2).Seconds()
	res.ProbeP50, res.ProbeP99 = Percentile(p, 0.5), Percentile(p, 0.99)
	res.ProbeCE, res.BulkCE = CE(p), CE(b)
	return res
}

// Print writes the result as a short report.
func (r DemoResult) Print(w io.Writer) {
	fmt.Fprintf(w, "demo: bulk flow at twice the rate: %d sent, %d received, %.2f Mbit/s received in the second half, %d with CE\n",
		r.BulkSent, r.BulkReceived, r.BulkBitsPerSecond/1e6, r.BulkCE)
	fmt.Fprintf(w, "demo: probe (100 bytes every 10 ms): %d sent, %d received, one-way delay p50 %v, p99 %v\n",
		r.ProbeSent, r.ProbeReceived, r.ProbeP50.Round(10*time.Microsecond), r.ProbeP99.Round(10*time.Microsecond))
}
