package sim

import (
	"fmt"
	"time"
)

// The lab scenario sets the simulator on the setup of the real-traffic lab
// (lab/cmd/aqmlab, docs/results/lab.md): a 50 Mb/s bottleneck, a 20 ms base RTT, a
// 1000-packet buffer, four long TCP flows and a probe every 10 ms, 15 s of
// load of which the first 5 s are left out, the lab's tests tcp_nup and
// rrul, each with CUBIC and with BBR, over the router's FIFO and FQ-CoDel.
const (
	labRateBps  = 50e6
	labRTT      = 20 * time.Millisecond
	labBuffer   = 1000 // packets: the lab's fifo:1000
	labFlows    = 4    // flent's tcp_nup and rrul: 4 TCP flows per direction
	labProbe    = 10 * time.Millisecond
	labDuration = 15 * time.Second // aqmlab -duration 15s
	labWarmup   = 5 * time.Second  // aqmlab's default warm-up, left out of every measure
	labJitter   = 5 * time.Millisecond
	// labAckBytes is a pure ACK on the wire as the queue counts it: IPv4
	// and TCP headers with the timestamp option.
	labAckBytes = 52
)

// labAckRate is the packet rate of the ACKs that rrul's downloads send
// into the upload direction's queue: their receivers ACK every second
// segment of a link's worth of 1500-byte data packets.
func labAckRate(rateBps float64) float64 { return rateBps / (1500 * 8) / 2 }

// rrul loads both directions of the lab's path alike (4 uploads, 4
// downloads), and the lab's router has one queue per direction. The
// scenario runs it on a two-way path (Config.Reverse): the uploads' data
// and the downloads' ACKs share the forward queue, the downloads' data and
// the uploads' ACKs the reverse one, each direction with its own queue of
// the same kind and the same rate, and the probe crosses both.
//
// The variant "one-way" runs a one-direction approximation for
// comparison: the 4 uploads, and beside them in the same queue the
// downloads' ACKs as a constant-rate stream of ACK-sized packets; the
// uploads' own ACKs return without queueing, and the table doubles the
// probe's added delay for the two directions.

// labTests are the lab tests the scenario models.
var labTests = []string{"tcp_nup", "rrul"}

// labCCs are the congestion controls, as aqmlab -cc cubic,bbr.
var labCCs = []Kind{CUBIC, BBR}

// LabAQMs are the lab scenario's default queues: the router's FIFO and
// FQ-CoDel.
var LabAQMs = []string{"fifo", "fq-codel"}

// LabProbeAddedMs returns the lab's measure of a run's probe, its added
// latency at the quantile q (0.5 or 0.99 give the ping's p50 and p99):
// the ping's RTT less its base RTT, doubled where the run carries the
// one-way variant's ACK stream (group "acks"), because the lab's probe
// then crosses two like-loaded queues; 0 without a ping.
func LabProbeAddedMs(r *Result, q float64) float64 {
	base, rt := -1.0, 1.0
	for _, f := range r.Flows {
		switch {
		case f.Kind == Ping && base < 0:
			base = f.RTTMs
		case f.Group == "acks":
			rt = 2
		}
	}
	if base < 0 {
		return 0
	}
	v := r.Ping.P50Ms
	if q > 0.5 {
		v = r.Ping.P99Ms
	}
	return rt * (v - base)
}

// LabGoodputShare returns the lab's goodput measure: the in-order payload
// of the uploads (group "up") and downloads (group "down") over the rate
// of the directions that carry them.
func LabGoodputShare(r *Result) float64 {
	capMbps := r.BottleneckMbps
	down := r.Group("down").GoodputMbps
	if r.Reverse != nil && down > 0 {
		capMbps += r.Reverse.RateMbps
	}
	if capMbps <= 0 {
		return 0
	}
	return (r.Group("up").GoodputMbps + down) / capMbps
}

var labScenario = Scenario{
	Name: "lab",
	Desc: "the real-traffic lab's setup (docs/results/lab.md): 50 Mb/s, base RTT 20 ms, 1000-packet buffer, 15 s of which the first 5 s are " +
		"left out, a 10 ms probe; tcp_nup (4 uploads) and rrul (4 uploads and 4 downloads on a two-way path, one queue per " +
		"direction, the probe crossing both), each with CUBIC and BBR; the router's FIFO and FQ-CoDel. Variant 'one-way': " +
		"rrul as 4 uploads and the downloads' ACKs as a constant stream of 52-byte packets at one per two link-rate segments " +
		"in one queue, the probe's added delay doubled for the two directions",
	Published: "the lab (docs/results/lab.md): rrul at 50 Mb/s (stage a) and tcp_nup at 50 Mb/s, added probe latency p50/p99 over " +
		"the idle RTT and goodput as a share of the rate",
	DefaultReps: 5,
	Variants:    []string{"one-way"},
	Runs: func(o Options) ([]Run, error) {
		if o.Variant != "" && o.Variant != "one-way" {
			return nil, fmt.Errorf("lab: unknown variant %q (want one-way or none)", o.Variant)
		}
		names, err := pickAQMs(o, LabAQMs)
		if err != nil {
			return nil, err
		}
		tcp, err := pickTCP(o, "linux")
		if err != nil {
			return nil, err
		}
		rtt := labRTT
		if len(o.RTTs) > 0 {
			rtt = o.RTTs[0]
		}
		rate := orRate(o.RateBps, labRateBps)
		n := orInt(o.Flows, labFlows)
		dur := orDur(o.Duration, labDuration)
		var runs []Run
		for _, test := range labTests {
			for _, cc := range labCCs {
				cfg := Config{
					RateBps: rate, Duration: dur, Warmup: min(labWarmup, dur/3), Seed: o.Seed,
					StartJitter: labJitter, Series: o.Series, TCP: tcp,
				}
				cfg.Flows = append(cfg.Flows, FlowSpec{Kind: cc, Count: n, RTT: rtt, Group: "up"})
				switch {
				case test == "rrul" && o.Variant == "one-way":
					cfg.Flows = append(cfg.Flows, FlowSpec{Kind: CBR, RateBps: labAckRate(rate) * labAckBytes * 8,
						PacketBytes: labAckBytes, RTT: rtt, Group: "acks"})
				case test == "rrul":
					cfg.Reverse = &ReversePath{RateBps: rate, AckBytes: labAckBytes}
					cfg.Flows = append(cfg.Flows, FlowSpec{Kind: cc, Count: n, RTT: rtt, Reverse: true, Group: "down"})
				}
				cfg.Flows = append(cfg.Flows, FlowSpec{Kind: Ping, RTT: rtt, Interval: labProbe, Group: "probe"})
				g := fmt.Sprintf("%s-%s", test, cc)
				for _, a := range names {
					runs = append(runs, Run{Scenario: "lab", Group: g, AQM: a, BufferPackets: labBuffer, Config: cfg,
						Params: map[string]string{"test": test, "cc": cc.String()}})
				}
			}
		}
		return runs, nil
	},
}
