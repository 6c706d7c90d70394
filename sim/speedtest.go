package sim

import (
	"fmt"
	"time"
)

// The speedtest scenario models the published speed-test lab study: NDT7
// (one BBR flow) and iperf3 (one CUBIC flow) through a Linux router that
// shapes a 1 Gb/s link with HTB at 100 … 1000 Mb/s, with and without burst
// allowance, with and without an iperf3 CUBIC cross-traffic flow, over
// pfifo, CoDel, FQ-CoDel and SFQ with Linux defaults, 10 repetitions.
const (
	speedtestLineBps   = 1e9                   // the testbed's 1 GbE
	speedtestTest      = 10 * time.Second      // NDT7's and iperf3's default test length
	speedtestCrossLead = 5 * time.Second       // cross traffic starts 5 s before the test
	speedtestRTT       = 20 * time.Millisecond // stand-in: base latency only offsets the results
	speedtestCeil      = 1.6                   // burst shaping: ceil = 1.6 × rate
	speedtestBurst     = 15 * 1024             // burst shaping: burst 15 KB (tc's k is 1024)
	speedtestCBurst    = 30 * 1024             // and cburst 30 KB
	speedtestJitter    = 20 * time.Millisecond // start jitter so that seeds differ
	speedtestQuickTest = 2 * time.Second       // -quick: test length
	speedtestQuickLead = 1 * time.Second       // -quick: cross-traffic lead
	speedtestPingEvery = 10 * time.Millisecond // the 8-flow variant's ping
	speedtestOldCross  = 2 * time.Second       // the 8-flow variant's cross-traffic lead
	speedtestOldRTTX   = 40 * time.Millisecond // the 8-flow variant's cross-traffic RTT
	speedtestMinRate   = 100e6                 // the study's rate steps
	speedtestRateStep  = 100e6                 //
	speedtestMaxRate   = 1000e6                //
	speedtestOldBuffer = 1000                  // the 8-flow variant's buffer for every AQM
	speedtestPktLimit  = 1000                  // pfifo and CoDel: Linux's limit (txqueuelen 1000)
)

// SpeedtestAQMs are the study's queues, and the limit each has with Linux
// defaults: pfifo takes the device's txqueuelen (1000), CoDel's limit is
// 1000, FQ-CoDel's 10240, SFQ's 127.
var SpeedtestAQMs = []struct {
	Name  string
	Limit int
}{{"fifo", speedtestPktLimit}, {"codel", speedtestPktLimit}, {"fq-codel", 10240}, {"sfq", 127}}

// SpeedtestRates returns the study's shaped rates: 100 to 1000 Mb/s in
// steps of 100 (-quick: 200 and 900).
func SpeedtestRates(quick bool) []float64 {
	if quick {
		return []float64{200e6, 900e6}
	}
	var rs []float64
	for r := speedtestMinRate; r <= speedtestMaxRate; r += speedtestRateStep {
		rs = append(rs, r)
	}
	return rs
}

// SpeedtestTools are the study's speed-test tools: NDT7 downloads over one
// BBR connection, iperf3 over one CUBIC connection.
var SpeedtestTools = []struct {
	Name string
	Kind Kind
}{{"ndt7", BBR}, {"iperf3", CUBIC}}

// speedtestShaper is HTB without (tc's defaults) or with burst shaping.
func speedtestShaper(rate float64, burst bool) *Shaper {
	if !burst {
		return &Shaper{RateBps: rate}
	}
	return &Shaper{RateBps: rate, CeilBps: speedtestCeil * rate, BurstBytes: speedtestBurst, CBurstBytes: speedtestCBurst}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

var speedtestScenario = Scenario{
	Name: "speedtest",
	Desc: "the speed-test lab study: NDT7 (one BBR flow) and iperf3 (one CUBIC flow) download for 10 s through HTB on a " +
		"1 Gb/s line, shaped at 100…1000 Mb/s in steps of 100, without burst shaping (tc defaults: burst = cburst = 1600 B) " +
		"or with it (ceil 1.6 × rate, burst 15 KB, cburst 30 KB), alone or against an iperf3 CUBIC flow started 5 s earlier; " +
		"pfifo (1000), CoDel (1000), FQ-CoDel (10240) and SFQ (127) with Linux defaults; base RTT 20 ms, HTB wake-up " +
		"latency 30 µs (a calibration: it sets how deep the no-burst dip goes); 10 seeds; instantaneous throughput in 100 ms bins and the test flow's RTT samples. " +
		"-quick: 200 and 900 Mb/s, 2 s tests. Variant '8flow-cubic': 8 parallel CUBIC flows at 100/200/500/1000 Mb/s (unshaped)",
	Published: "speed-test lab study: without burst shaping the shaped link is markedly under-used at high rates, with it " +
		"throughput comes close to the limit; FQ-CoDel at 900 Mb/s: std-dev of instantaneous throughput 138 Mb/s with cross " +
		"traffic and burst shaping, 1.51 Mb/s with neither; fair queueing splits the link between the test and the cross traffic",
	DefaultReps: 10,
	Variants:    []string{"8flow-cubic"},
	Runs: func(o Options) ([]Run, error) {
		switch o.Variant {
		case "":
		case "8flow-cubic":
			return speedtest8Flow(o)
		default:
			return nil, fmt.Errorf("speedtest: unknown variant %q (want 8flow-cubic or none)", o.Variant)
		}
		var aqms []string
		limits := map[string]int{}
		for _, a := range SpeedtestAQMs {
			aqms = append(aqms, a.Name)
			limits[a.Name] = a.Limit
		}
		names, err := pickAQMs(o, aqms)
		if err != nil {
			return nil, err
		}
		tcp, err := pickTCP(o, "linux")
		if err != nil {
			return nil, err
		}
		rates := SpeedtestRates(o.Quick)
		if o.RateBps > 0 {
			rates = []float64{o.RateBps}
		}
		test, lead := speedtestTest, speedtestCrossLead
		if o.Quick {
			test, lead = speedtestQuickTest, speedtestQuickLead
		}
		test = orDur(o.Duration, test)
		rtt := speedtestRTT
		if len(o.RTTs) > 0 {
			rtt = o.RTTs[0]
		}
		var runs []Run
		for _, tool := range SpeedtestTools {
			for _, rate := range rates {
				for _, burst := range []bool{false, true} {
					for _, cross := range []bool{false, true} {
						cfg := Config{
							RateBps: speedtestLineBps, Shaper: speedtestShaper(rate, burst),
							Duration: lead + test, Warmup: lead, Seed: o.Seed, StartJitter: speedtestJitter, Series: o.Series, TCP: tcp,
							Flows: []FlowSpec{{Kind: tool.Kind, RTT: rtt, Start: lead, Group: "test"}},
						}
						if cross {
							cfg.Flows = append(cfg.Flows, FlowSpec{Kind: CUBIC, RTT: rtt, Stop: lead + test, Group: "cross"})
						}
						g := fmt.Sprintf("%s %gM burst=%s cross=%s", tool.Name, rate/1e6, onOff(burst), onOff(cross))
						for _, a := range names {
							limit := limits[a]
							if limit == 0 {
								limit = speedtestPktLimit
							}
							runs = append(runs, Run{Scenario: "speedtest", Group: g, AQM: a, BufferPackets: limit, Config: cfg,
								Params: map[string]string{"tool": tool.Name, "rate_mbps": fmt.Sprint(rate / 1e6),
									"burst": onOff(burst), "cross": onOff(cross)}})
						}
					}
				}
			}
		}
		return runs, nil
	},
}

// speedtest8Flow is the earlier multi-stream case: 8 parallel CUBIC flows
// (RTT 20 ms) for 10 s over an unshaped link of 100, 200, 500 and
// 1000 Mb/s, alone or against 2 CUBIC cross flows (RTT 40 ms) started 2 s
// earlier, with a 10 ms ping; every queue with a 1000-packet limit.
func speedtest8Flow(o Options) ([]Run, error) {
	names, err := pickAQMs(o, []string{"fifo", "codel", "fq-codel", "sfq"})
	if err != nil {
		return nil, err
	}
	tcp, err := pickTCP(o, "linux")
	if err != nil {
		return nil, err
	}
	rates := []float64{100e6, 200e6, 500e6, 1000e6}
	if o.RateBps > 0 {
		rates = []float64{o.RateBps}
	}
	rtts := orRTTs(o.RTTs, []time.Duration{speedtestRTT, speedtestOldRTTX})
	crossRTT := rtts[len(rtts)-1]
	n := orInt(o.Flows, 8)
	test := orDur(o.Duration, speedtestTest)
	var runs []Run
	for _, rate := range rates {
		for _, cross := range []bool{false, true} {
			cfg := Config{
				RateBps: rate, Duration: speedtestOldCross + test, Warmup: speedtestOldCross, Seed: o.Seed,
				StartJitter: speedtestJitter, Series: o.Series, TCP: tcp,
				Flows: []FlowSpec{
					{Kind: CUBIC, Count: n, RTT: rtts[0], Start: speedtestOldCross, Group: "test"},
					{Kind: Ping, RTT: rtts[0], Interval: speedtestPingEvery},
				},
			}
			g := fmt.Sprintf("8flow %gMb/s", rate/1e6)
			if cross {
				cfg.Flows = append(cfg.Flows, FlowSpec{Kind: CUBIC, Count: 2, RTT: crossRTT, Group: "cross"})
				g += " +cross"
			}
			for _, a := range names {
				runs = append(runs, Run{Scenario: "speedtest", Group: g, AQM: a, BufferPackets: speedtestOldBuffer, Config: cfg})
			}
		}
	}
	return runs, nil
}
