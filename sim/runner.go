package sim

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/aqmkit/aqmkit/aqm"
)

// Run is one cell of a scenario: an AQM, its environment and a
// configuration, repeated Reps times with seeds Seed, Seed+1, ….
type Run struct {
	// Scenario is the scenario's name.
	Scenario string
	// Group names the scenario's sub-case (for example "mix=1:9 rtt=20ms");
	// tables put one row per Group and AQM.
	Group string
	// AQM is the queue's name in the table ([AQMs]).
	AQM string
	// BufferPackets is the hard limit given to every queue.
	BufferPackets int
	// REDMinThreshold and REDMaxThreshold are passed in [Env].
	REDMinThreshold, REDMaxThreshold int `json:",omitempty"`
	// RED overrides the RED family's settings; passed in [Env].
	RED REDParams `json:",omitzero"`
	// Params label the run's sub-case by parameter (for example the
	// speedtest's tool, rate, burst and cross traffic), for plots and
	// outputs.
	Params map[string]string `json:",omitempty"`
	// Flood, if set, marks one of Config's flows as a flood (see [Flood]).
	Flood *Flood `json:",omitempty"`
	// Config is the simulation; its Seed is the first repetition's.
	Config Config
	// Rep is the repetition index (set by [Execute]).
	Rep int
}

// Execute runs one simulation: it builds the AQM from the table, with the
// run's seed, and returns the metrics.
func (r Run) Execute() (*Result, error) {
	a, err := LookupAQM(r.AQM)
	if err != nil {
		return nil, err
	}
	// New builds the forward queue first, then the reverse one if the path
	// has it, sized for its own rate and never wrapped by a flood.
	built := 0
	s, err := New(r.Config, func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		built++
		rate := r.Config.BottleneckBps()
		if built > 1 && r.Config.Reverse.RateBps > 0 {
			rate = r.Config.Reverse.RateBps
		}
		q, err := a.New(Env{
			RateBps: rate, MSS: max(r.Config.MSS, 0), MaxRTT: r.Config.MaxRTT(),
			BufferPackets: r.BufferPackets, REDMinThreshold: r.REDMinThreshold,
			REDMaxThreshold: r.REDMaxThreshold, RED: r.RED, Seed: queueSeed(r.Config.Seed), OnDrop: onDrop, Capacity: r.Config.Capacity,
		})
		if err != nil || r.Flood == nil || built > 1 {
			return q, err
		}
		return r.Flood.wrap(q, &r.Config)
	})
	if err != nil {
		return nil, fmt.Errorf("%s/%s/%s: %w", r.Scenario, r.Group, r.AQM, err)
	}
	return s.Run(), nil
}

// Outcome is a finished run.
type Outcome struct {
	Run    Run
	Result *Result
	Err    error
}

// ExecuteAll runs every run reps times (seeds Seed+rep) on workers
// goroutines (GOMAXPROCS if workers ≤ 0), one simulation per goroutine at a
// time, and returns the outcomes in the order of runs then repetitions, so
// the output does not depend on scheduling. progress, if not nil, is called
// after each simulation from the goroutine that ran it, serialised.
func ExecuteAll(runs []Run, reps, workers int, progress func(done, total int, o Outcome)) []Outcome {
	reps = max(reps, 1)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make([]Run, 0, len(runs)*reps)
	for _, r := range runs {
		for rep := range reps {
			j := r
			j.Rep = rep
			j.Config.Seed = r.Config.Seed + uint64(rep)
			jobs = append(jobs, j)
		}
	}
	out := make([]Outcome, len(jobs))
	next := make(chan int)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			for i := range next {
				res, err := jobs[i].Execute()
				out[i] = Outcome{Run: jobs[i], Result: res, Err: err}
				if progress != nil {
					mu.Lock()
					done++
					progress(done, len(jobs), out[i])
					mu.Unlock()
				}
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// queueSeed is the seed a run's queue gets: the run's own, except that zero,
// which the queues take as "draw a secret from crypto/rand", becomes a fixed
// value, so every simulation stays reproducible from its seed.
func queueSeed(seed uint64) uint64 {
	if seed == 0 {
		return 0x5eed
	}
	return seed
}
