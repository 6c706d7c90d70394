package sim

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/fq"
)

// The flood scenario: an unresponsive UDP sender at twice the link's rate
// beside one CUBIC upload and a 10 ms probe, all from one host. With
// RandomPorts the sender picks new source and destination ports for every
// packet, so every packet is a new 5-tuple and a new flow hash; without,
// the flood is one 5-tuple. A fair queue sees the first as thousands of
// one-packet flows and the second as one fat flow.
const (
	floodRateBps  = 50e6
	floodRTT      = 20 * time.Millisecond
	floodFactor   = 2 // the flood's rate over the link's
	floodStart    = 2 * time.Second
	floodDuration = 30 * time.Second
	floodWarmup   = 5 * time.Second
	floodBuffer   = 1000
	floodProbe    = 10 * time.Millisecond
	floodLabPorts = 65536 - 1024 // the lab's flood: source ports in [1024, 65536)
)

// Flood marks one flow of a run's Config.Flows as a flood and says how its
// packets are hashed.
type Flood struct {
	// Flow is the flood's index in Config.Flows; it and every flow spec
	// before it must have Count at most one.
	Flow int
	// RandomPorts gives every packet of the flood a new flow hash, as a
	// sender that picks new ports for each packet; false keeps the flow's
	// one hash (one 5-tuple).
	RandomPorts bool
	// Unguarded turns the fair queues' flood guard off (FQ-CoDel,
	// FQ-COBALT, FQ-PIE and CAKE behave as Linux's fq_codel and cake).
	Unguarded bool `json:",omitempty"`
	// Ports, with RandomPorts, draws each packet's source port from Ports
	// values (the lab's flood draws from [1024, 65536): 64512), so a hash
	// recurs now and then, and within one bucket of a 1024-bucket table
	// about every 63rd flood packet of that bucket repeats the one before.
	// Zero gives every packet a fresh hash.
	Ports int `json:",omitempty"`
}

// floodQueue gives every packet of the flood's flow a fresh hash before
// the queue sees it; everything else passes through.
type floodQueue struct {
	aqm.Queue[uint64]
	hash  uint32 // the flood flow's hash
	state uint64 // SplitMix64 state of the per-packet hashes
	ports uint64 // source ports drawn from; 0: a fresh hash per packet
}

func (w *floodQueue) Enqueue(p aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	if p.Hash == w.hash {
		w.state += 0x9e3779b97f4a7c15
		z := splitmix(w.state)
		if w.ports > 0 {
			// The port is a uniform draw; the hash of the 5-tuple it makes
			// is a fixed function of it.
			port := (z >> 32) * w.ports >> 32
			z = splitmix(uint64(w.hash)<<32 ^ port)
		}
		p.Hash = uint32(z >> 32)
	}
	return w.Queue.Enqueue(p, now)
}

// splitmix is SplitMix64's finaliser.
func splitmix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// wrap returns q as the run's flood needs it: with the guard off if
// Unguarded, and behind a per-packet rehash if RandomPorts.
func (fl *Flood) wrap(q aqm.Queue[uint64], cfg *Config) (aqm.Queue[uint64], error) {
	if fl.Flow < 0 || fl.Flow >= len(cfg.Flows) {
		return nil, fmt.Errorf("sim: Flood.Flow (%d) is not a flow of the run", fl.Flow)
	}
	if fl.Unguarded {
		if err := unguard(q); err != nil {
			return nil, err
		}
	}
	if !fl.RandomPorts {
		return q, nil
	}
	for _, fs := range cfg.Flows[:fl.Flow+1] {
		if fs.Count > 1 {
			return nil, fmt.Errorf("sim: Flood.Flow (%d) must follow flow specs of Count at most 1", fl.Flow)
		}
	}
	// The long-lived flows are numbered in the order of Config.Flows, so
	// the flood's flow has id Flow; its hash is the one the simulator gives it.
	tcp := cfg.TCP
	h := newFlow(int32(fl.Flow), cfg.Flows[fl.Flow], false, max(cfg.MSS, DefaultMSS), &tcp).hash
	if fl.Ports < 0 {
		return nil, fmt.Errorf("sim: Flood.Ports (%d) must not be negative", fl.Ports)
	}
	return &floodQueue{Queue: q, hash: h, state: cfg.Seed ^ 0x243f6a8885a308d3, ports: uint64(fl.Ports)}, nil
}

// unguard turns the flood guard of a fair queue off (the queue is empty).
func unguard(q aqm.Queue[uint64]) error {
	switch q := q.(type) {
	case *fq.CoDel[uint64]:
		c := q.Config()
		c.DisableFloodGuard = true
		return q.Reconfigure(c)
	case *fq.Cobalt[uint64]:
		c := q.Config()
		c.DisableFloodGuard = true
		return q.Reconfigure(c)
	case *fq.PIE[uint64]:
		c := q.Config()
		c.DisableFloodGuard = true
		return q.Reconfigure(c)
	case *cake.Queue[uint64]:
		c := q.Config()
		c.DisableFloodGuard = true
		return q.Reconfigure(c)
	}
	return nil
}

// FloodAQMs are the flood scenario's queues.
var FloodAQMs = []string{"fifo", "fq-codel", "fq-cobalt", "fq-pie", "cake"}

var floodScenario = Scenario{
	Name: "flood",
	Desc: "a 50 Mb/s link, RTT 20 ms: one CUBIC upload and a UDP probe every 10 ms, and from 2 s a UDP flood at twice " +
		"the link's rate from the same host, either with new random ports on every packet (a new flow hash per packet) " +
		"or as one 5-tuple; 1000-packet buffer; 30 s, first 5 s excluded. Variant 'unguarded': the fair queues with their " +
		"flood guard off, as Linux's fq_codel and cake. Variant 'ports': the random ports drawn, as the lab's flood draws them, " +
		"from 64512 source ports, so that hashes recur",
	DefaultReps: 2,
	Variants:    []string{"unguarded", "ports"},
	Runs: func(o Options) ([]Run, error) {
		unguarded, ports := false, 0
		switch o.Variant {
		case "":
		case "unguarded":
			unguarded = true
		case "ports":
			ports = floodLabPorts
		default:
			return nil, fmt.Errorf("flood: unknown variant %q (want unguarded, ports or none)", o.Variant)
		}
		names, err := pickAQMs(o, FloodAQMs)
		if err != nil {
			return nil, err
		}
		rtt := orRTTs(o.RTTs, []time.Duration{floodRTT})[0]
		rate := orRate(o.RateBps, floodRateBps)
		var runs []Run
		for _, random := range []bool{true, false} {
			cfg := Config{
				RateBps: rate, Duration: orDur(o.Duration, floodDuration), Seed: o.Seed,
				StartJitter: 10 * time.Millisecond, Series: o.Series,
				Flows: []FlowSpec{
					{Kind: CUBIC, RTT: rtt, Group: "tcp"},
					{Kind: Ping, RTT: rtt, Interval: floodProbe, Group: "probe"},
					{Kind: CBR, RTT: rtt, RateBps: floodFactor * rate, Start: floodStart, Group: "flood"},
				},
			}
			cfg.Warmup = min(floodWarmup, cfg.Duration/6)
			g := "one-tuple"
			if random {
				g = "random-ports"
			}
			if unguarded {
				g += " unguarded"
			}
			if ports > 0 && random {
				g += fmt.Sprintf(" (%d)", ports)
			}
			for _, a := range names {
				runs = append(runs, Run{Scenario: "flood", Group: g, AQM: a, BufferPackets: floodBuffer, Config: cfg,
					Flood: &Flood{Flow: 2, RandomPorts: random, Unguarded: unguarded, Ports: ports}})
			}
		}
		return runs, nil
	},
}
