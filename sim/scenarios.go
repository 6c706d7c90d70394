package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Options are the command-line overrides a scenario honours. Zero fields
// keep the scenario's own values.
type Options struct {
	// AQMs replaces the scenario's list of queues.
	AQMs []string
	// RateBps replaces the bottleneck rate (speedtest: the list of rates
	// becomes this one rate).
	RateBps float64
	// RTTs replaces the base RTTs (cycled over the flows, or one sub-case
	// per RTT in l4s).
	RTTs []time.Duration
	// Flows replaces the number of long-lived flows.
	Flows int
	// Duration replaces the simulated time.
	Duration time.Duration
	// Seed is the first repetition's seed.
	Seed uint64
	// Series keeps time series (for plots).
	Series bool
	// Variant selects one of the scenario's named variants ("" is the
	// scenario itself; see Scenario.Variants).
	Variant string
	// Quick shrinks the scenario to a CI-sized run where it supports it.
	Quick bool
	// TCP names the TCP profile ("ns3" or "linux") instead of the
	// scenario's own.
	TCP string
	// Traces replaces the autorate scenario's capacity traces with these
	// files (see [LoadTrace]).
	Traces []string
}

// pickTCP returns the profile o.TCP names, or the scenario's default.
func pickTCP(o Options, def string) (TCPConfig, error) {
	name := def
	if o.TCP != "" {
		name = o.TCP
	}
	return TCPProfile(name)
}

// Scenario is a named experiment: a set of runs and the published figures
// it is meant to be compared with.
type Scenario struct {
	Name string
	Desc string
	// Published summarises the published results the scenario reproduces.
	Published string
	// DefaultReps is the number of repetitions when the caller asks for none.
	DefaultReps int
	// Variants are the names Options.Variant accepts besides "".
	Variants []string
	// Runs expands the scenario into runs.
	Runs func(o Options) ([]Run, error)
}

// Scenarios returns the scenarios in display order.
func Scenarios() []Scenario {
	return []Scenario{compareScenario, redFamilyScenario, l4sScenario, speedtestScenario, autorateScenario, floodScenario, labScenario}
}

// LookupScenario returns the scenario called name.
func LookupScenario(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (available: %s)", name, strings.Join(names, ", "))
}

// pickAQMs returns o.AQMs (all must exist) or the registered subset of
// defaults.
func pickAQMs(o Options, defaults []string) ([]string, error) {
	if len(o.AQMs) > 0 {
		for _, n := range o.AQMs {
			if _, err := LookupAQM(n); err != nil {
				return nil, err
			}
		}
		return o.AQMs, nil
	}
	var out []string
	for _, n := range defaults {
		if _, ok := aqms[n]; ok {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("none of the scenario's AQMs (%s) is built yet", strings.Join(defaults, ", "))
	}
	return out, nil
}

// MissingAQMs lists the names in want that are not registered.
func MissingAQMs(want []string) []string {
	var out []string
	for _, n := range want {
		if _, err := LookupAQM(n); err != nil {
			out = append(out, n)
		}
	}
	return out
}

func orDur(v, d time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return d
}

func orRTTs(v, d []time.Duration) []time.Duration {
	if len(v) > 0 {
		return v
	}
	return d
}

func orInt(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

func orRate(v, d float64) float64 {
	if v > 0 {
		return v
	}
	return d
}

// CompareAQMs is the default comparison's list: every queue in the library.
var CompareAQMs = []string{"fifo", "red", "gentle-red", "ared", "codel", "fq-codel", "sfq", "pie", "dualpi2", "cobalt", "fq-cobalt", "fq-pie", "cake"}

// compareScenario is what the command runs with no arguments: every AQM on
// one representative home-access link.
var compareScenario = Scenario{
	Name: "compare",
	Desc: "every AQM on a 50 Mb/s link: 4 long CUBIC flows (RTT 20/40/60/80 ms), Poisson web-like short " +
		"CUBIC flows (6/s, mean 20 packets, Pareto 1.5), a 10 ms ping; 1000-packet buffer; 30 s, first 5 s excluded",
	DefaultReps: 1,
	Runs: func(o Options) ([]Run, error) {
		names, err := pickAQMs(o, CompareAQMs)
		if err != nil {
			return nil, err
		}
		tcp, err := pickTCP(o, "linux")
		if err != nil {
			return nil, err
		}
		rtts := orRTTs(o.RTTs, []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond})
		n := orInt(o.Flows, 4)
		cfg := Config{
			RateBps: orRate(o.RateBps, 50e6), Duration: orDur(o.Duration, 30*time.Second), Seed: o.Seed,
			StartJitter: 100 * time.Millisecond, Series: o.Series, TCP: tcp,
			Short: ShortFlows{PerSecond: 6, Kind: CUBIC, MeanPackets: 20, ParetoShape: 1.5, RTT: rtts[0]},
		}
		cfg.Warmup = cfg.Duration / 6
		for i := range n {
			cfg.Flows = append(cfg.Flows, FlowSpec{Kind: CUBIC, RTT: rtts[i%len(rtts)], Group: "bulk"})
		}
		cfg.Flows = append(cfg.Flows, FlowSpec{Kind: Ping, RTT: rtts[0], Interval: 10 * time.Millisecond})
		var runs []Run
		for _, a := range names {
			runs = append(runs, Run{Scenario: "compare", Group: fmt.Sprintf("%gMb/s", cfg.RateBps/1e6), AQM: a, BufferPackets: 1000, Config: cfg})
		}
		return runs, nil
	},
}

// redFamilyScenario is in redfamily.go.

// L4SMixes are the l4s scenario's L4S:Classic flow mixes.
var L4SMixes = [][2]int{{1, 1}, {5, 5}, {1, 9}}

var l4sScenario = Scenario{
	Name: "l4s",
	Desc: "Prague (ECT(1), paced, RTT-independent unless marked no-rtt-indep) and CUBIC (Not-ECT, HyStart++) long-lived flows " +
		"in the mixes 1:1, 5:5 and 1:9 at 40 Mb/s, one base RTT per sub-case (10, 20, 50, 100 ms), each with Prague's RTT " +
		"independence on and off; DualPI2 against PIE (target 15 ms) and FQ-CoDel, and PIE and FQ-CoDel again with ECN-CUBIC " +
		"(ECT(0)) as the Classic flows; 1000-packet buffer; 40 s, first 10 s excluded",
	Published: "DualPI2 paper: L4S queueing delay median a few hundred µs and P99 < 2 ms under DualPI2, against tens of " +
		"ms at P99 under PIE; balanced L4S:Classic rate (ratio near 1) with TCP Prague's RTT independence",
	DefaultReps: 1,
	Runs: func(o Options) ([]Run, error) {
		names, err := pickAQMs(o, []string{"dualpi2", "pie", "fq-codel"})
		if err != nil {
			return nil, err
		}
		tcp, err := pickTCP(o, "linux")
		if err != nil {
			return nil, err
		}
		rtts := orRTTs(o.RTTs, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond})
		mixes := L4SMixes
		if o.Flows > 0 {
			// -flows n: n L4S and n Classic flows.
			mixes = [][2]int{{o.Flows, o.Flows}}
		}
		var runs []Run
		for _, mix := range mixes {
			for _, rtt := range rtts {
				for _, indep := range []bool{true, false} {
					for _, ecnCubic := range []bool{false, true} {
						cfg := Config{
							RateBps: orRate(o.RateBps, 40e6), Duration: orDur(o.Duration, 40*time.Second), Seed: o.Seed,
							StartJitter: 100 * time.Millisecond, Series: o.Series, TCP: tcp,
							Flows: []FlowSpec{
								{Kind: Prague, Count: mix[0], RTT: rtt, Group: "l4s", PragueNoRTTIndependence: !indep},
								{Kind: CUBIC, Count: mix[1], RTT: rtt, Group: "classic", HyStart: true, ECN: ecnCubic},
							},
						}
						cfg.Warmup = cfg.Duration / 4
						g := fmt.Sprintf("%d:%d rtt=%v", mix[0], mix[1], rtt)
						if !indep {
							g += " no-rtt-indep"
						}
						if ecnCubic {
							g += " ecn-cubic"
						}
						for _, a := range names {
							if ecnCubic && a != "pie" && a != "fq-codel" {
								continue
							}
							runs = append(runs, Run{Scenario: "l4s", Group: g, AQM: a, BufferPackets: 1000, Config: cfg,
								Params: map[string]string{"mix": fmt.Sprintf("%d:%d", mix[0], mix[1]), "rtt": rtt.String(),
									"rtt_indep": onOff(indep), "classic": map[bool]string{false: "cubic", true: "ecn-cubic"}[ecnCubic]}})
						}
					}
				}
			}
		}
		return runs, nil
	},
}

// speedtestScenario is in speedtest.go.

// ScenarioAQMs returns the AQM names a scenario uses by default,
// registered or not (for reporting which are missing).
func ScenarioAQMs(name string) []string {
	switch name {
	case "compare":
		return slices.Clone(CompareAQMs)
	case "red-family":
		return []string{"red", "ared", "gentle-red"}
	case "l4s":
		return []string{"dualpi2", "pie", "fq-codel"}
	case "speedtest":
		return []string{"fifo", "codel", "fq-codel", "sfq"}
	case "autorate":
		return slices.Clone(AutorateAQMs)
	case "flood":
		return slices.Clone(FloodAQMs)
	case "lab":
		return slices.Clone(LabAQMs)
	}
	return nil
}
