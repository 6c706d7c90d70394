package sim

import (
	"testing"
	"time"
)

// BenchmarkSim measures the simulator's speed: one op is a 2-second run of
// 8 CUBIC flows and a ping through a 100 Mb/s drop-tail bottleneck. It
// reports simulated packets and events per second of real time.
func BenchmarkSim(b *testing.B) {
	cfg := Config{RateBps: 100e6, Duration: 2 * time.Second, Flows: []FlowSpec{
		{Kind: CUBIC, Count: 8, RTT: 40 * time.Millisecond}, {Kind: Ping, Interval: 10 * time.Millisecond}}}
	var pkts, events uint64
	b.ReportAllocs()
	for b.Loop() {
		r := mustRun(b, cfg, fifoQ(1000))
		if r.Packets == 0 {
			b.Fatal("the run simulated no packets")
		}
		pkts += r.Packets
		events += r.Events
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(pkts)/s, "pkts/s")
	b.ReportMetric(float64(events)/s, "events/s")
	b.ReportMetric(0, "ns/op")
}
