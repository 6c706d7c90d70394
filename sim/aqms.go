package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Env is what an AQM constructor in the table may tune itself to: the link
// and path of the run, the buffer the scenario allows, and the seed.
type Env struct {
	// RateBps is the bottleneck rate at the start of the run.
	RateBps float64
	// MSS is the data packet size in bytes.
	MSS int
	// MaxRTT is the largest base RTT of the scenario's flows.
	MaxRTT time.Duration
	// BufferPackets is the hard limit every queue gets, in packets.
	BufferPackets int
	// REDMinThreshold and REDMaxThreshold, if set, are the RED family's
	// thresholds in packets (the red-family scenario gives all three
	// variants the same ones); zero leaves RED's automatic thresholds.
	REDMinThreshold, REDMaxThreshold int
	// RED overrides other RED-family settings (zero fields keep the
	// defaults).
	RED REDParams
	// Seed seeds the queue's own random stream.
	Seed uint64
	// OnDrop must be passed to the queue as its DropFunc.
	OnDrop aqm.DropFunc[uint64]
	// Capacity is the run's capacity trace, if it has one.
	Capacity *Trace
}

// AQM is one entry of the simulator's queue table.
type AQM struct {
	// Name is the short name used by the command's -aqms flag.
	Name string
	// Desc says how it is configured.
	Desc string
	// New builds the queue for one run.
	New func(e Env) (aqm.Queue[uint64], error)
}

var aqms = map[string]AQM{}

// aqmOrder is the display order; names not registered are skipped.
var aqmOrder = []string{"fifo", "red", "gentle-red", "ared", "codel", "fq-codel", "sfq", "pie", "pie-ecn", "dualpi2", "cobalt", "fq-cobalt", "fq-pie", "cake"}

// register adds an AQM to the table; each aqm_<name>.go file calls it from
// init.
func register(a AQM) {
	if _, dup := aqms[a.Name]; dup {
		panic("sim: AQM registered twice: " + a.Name)
	}
	aqms[a.Name] = a
}

// AQMs returns the registered AQMs in display order.
func AQMs() []AQM {
	var out []AQM
	for _, n := range aqmOrder {
		if a, ok := aqms[n]; ok {
			out = append(out, a)
		}
	}
	var rest []string
	for n := range aqms {
		if !slices.Contains(aqmOrder, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	for _, n := range rest {
		out = append(out, aqms[n])
	}
	return out
}

// LookupAQM returns the AQM called name.
func LookupAQM(name string) (AQM, error) {
	a, ok := aqms[name]
	if !ok {
		a, ok = pathAQMs[name] // the autorate scenario's paths
	}
	if !ok {
		var names []string
		for _, a := range AQMs() {
			names = append(names, a.Name)
		}
		return AQM{}, fmt.Errorf("sim: unknown AQM %q (available: %v)", name, names)
	}
	return a, nil
}
