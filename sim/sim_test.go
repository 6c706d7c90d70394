package sim

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
)

// mixed is a busy configuration that exercises every sender kind, short
// flows, random loss and a rate change.
func mixed(seed uint64) Config {
	return Config{
		RateBps: 20e6, Duration: 8 * time.Second, Warmup: time.Second, Seed: seed, LossProb: 0.001,
		StartJitter: 50 * time.Millisecond, Series: true,
		RateChanges: []RateChange{{At: 4 * time.Second, RateBps: 10e6}},
		Flows: []FlowSpec{
			{Kind: Reno, Count: 2, RTT: 30 * time.Millisecond},
			{Kind: CUBIC, ECN: true, RTT: 60 * time.Millisecond},
			{Kind: Prague, RTT: 20 * time.Millisecond},
			{Kind: BBR, RTT: 40 * time.Millisecond},
			{Kind: CBR, RateBps: 1e6, ECN: true},
			{Kind: Ping, Interval: 10 * time.Millisecond},
		},
		Short: ShortFlows{PerSecond: 5, Kind: CUBIC, MeanPackets: 15, ParetoShape: 1.5},
	}
}

func codelLike(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
	a, err := LookupAQM("codel")
	if err != nil {
		return fifo.New(fifo.Config{LimitPackets: 200}, d)
	}
	return a.New(Env{RateBps: 20e6, MSS: DefaultMSS, BufferPackets: 200, Seed: 1, OnDrop: d})
}

func resultJSON(t *testing.T, r *Result) string {
	r.WallSeconds = 0
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return string(b)
}

// TestDeterministic protects reproducibility: the same configuration and
// seed give the same result bit for bit, and another seed another result.
func TestDeterministic(t *testing.T) {
	a := resultJSON(t, mustRun(t, mixed(1), codelLike))
	b := resultJSON(t, mustRun(t, mixed(1), codelLike))
	c := resultJSON(t, mustRun(t, mixed(2), codelLike))
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
}

// TestScoreboardAndConservation protects the SACK scoreboard and the packet
// table: on a lossy mixed run, after every ACK the incremental pipe and
// lost-hole counts equal a brute-force recount, and at the end every packet
// slot is either free or accounted for by the queue, the link or a return
// path.
func TestScoreboardAndConservation(t *testing.T) {
	cfg := mixed(5)
	var s *Sim
	checks := 0
	cfg.Trace = func(_ time.Duration, id int, _ float64) {
		f := s.flows[id]
		var sacked, holes, retx int64
		for seq := f.sndUna; seq < f.highSent; seq++ {
			switch {
			case f.sacked.has(seq, f.sndUna):
				sacked++
			case seq < f.lostEnd:
				holes++
			}
			if f.retxd.has(seq, f.sndUna) {
				retx++
			}
		}
		if sacked != int64(f.sacked.n) || holes != f.lostHoles || retx != int64(f.retxd.n) {
			t.Fatalf("flow %d: scoreboard sacked %d/%d holes %d/%d retx %d/%d", id, sacked, f.sacked.n, holes, f.lostHoles, retx, f.retxd.n)
		}
		checks++
	}
	s, err := New(cfg, codelLike)
	require.NoError(t, err)
	r := s.Run()
	require.Greater(t, checks, 5000)
	require.NotZero(t, r.Drops)

	inUse := len(s.pkts) - len(s.free)
	held := s.q.Len()
	if s.busy {
		held++
	}
	for _, f := range s.flows {
		held += f.line.n
	}
	require.Equal(t, held, inUse, "every live packet slot is queued, on the wire or on a return path")
	st := s.q.Stats()
	require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len))
}

// TestResultSanity protects the metric definitions on the mixed run:
// utilization in (0, 1], goodput not above capacity, per-class delays
// present, fairness index in (0, 1], and the time series one point per
// sample interval.
func TestResultSanity(t *testing.T) {
	r := mustRun(t, mixed(3), codelLike)
	require.Greater(t, r.Utilization, 0.5)
	require.LessOrEqual(t, r.Utilization, 1.0)
	// Capacity after warmup: 3 s at 20 Mb/s and 4 s at 10 Mb/s. Goodput is
	// what receivers deliver in order, so it also releases data that crossed
	// the link during the warmup and waited there for a retransmission: it
	// may exceed the capacity by that reassembly backlog (a few percent at
	// most here), never by more.
	require.Less(t, r.GoodputMbps, 1.03*(3*20.0+4*10)/7)
	require.Less(t, r.GoodputMbps, r.Utilization*(3*20.0+4*10)/7*1.03)
	for _, c := range []string{"all", "classic", "l4s", "udp", "short", "ping"} {
		require.NotZero(t, r.Delay[c].Count, c)
		require.LessOrEqual(t, r.Delay[c].P50Ms, r.Delay[c].P99Ms)
		require.LessOrEqual(t, r.Delay[c].P99Ms, r.Delay[c].MaxMs)
	}
	require.NotZero(t, r.Ping.Count)
	require.NotZero(t, r.FCT.Count)
	require.Greater(t, r.Jain, 0.0)
	require.LessOrEqual(t, r.Jain, 1.0)
	require.Greater(t, r.L4SClassicRatio, 0.0)
	require.Len(t, r.Series.T, 80)
	// The CBR source is unresponsive: it gets its 1 Mb/s less its drops.
	for _, f := range r.Flows {
		if f.Kind == CBR {
			require.InDelta(t, 1.0, f.GoodputMbps, 0.1)
		}
	}
}

// TestJain protects the fairness index against its closed forms.
func TestJain(t *testing.T) {
	require.InDelta(t, 1.0, Jain([]float64{3, 3, 3}), 1e-12)
	require.InDelta(t, 0.25, Jain([]float64{5, 0, 0, 0}), 1e-12)
	// (1+2)²/(2·(1+4)) = 0.9
	require.InDelta(t, 0.9, Jain([]float64{1, 2}), 1e-12)
	require.Zero(t, Jain(nil))
}

// TestAgendaOrder protects the event core: events come out by time, and in
// scheduling order at equal times.
func TestAgendaOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h agenda
	type key struct {
		at  aqm.Time
		arg int64
	}
	var want []key
	for i := range 5000 {
		at := aqm.Time(r.IntN(300))
		h.push(event{at: at, arg: int64(i)})
		want = append(want, key{at, int64(i)})
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].at < want[j].at })
	var got []key
	for h.len() > 0 {
		e := h.pop()
		got = append(got, key{e.at, e.arg})
	}
	require.Equal(t, want, got)
}

// TestHistogramQuantiles protects the delay percentiles: within the
// histogram's stated 1/64 relative resolution of the exact order statistic.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	var xs []time.Duration
	for range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(5*time.Millisecond))
		h.Record(d)
		xs = append(xs, d)
	}
	slices.Sort(xs)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		exact := xs[int(q*float64(len(xs)))]
		require.InEpsilon(t, float64(exact), float64(h.Quantile(q)), 1.0/64, "q=%g", q)
	}
	require.Equal(t, xs[len(xs)-1], h.Max())
	vals, frac := h.CDF()
	require.Equal(t, 1.0, frac[len(frac)-1])
	require.True(t, slices.IsSorted(vals))
}

// TestConfigErrors protects validation: every bad field is named.
func TestConfigErrors(t *testing.T) {
	_, err := New(Config{RateBps: -1, Duration: 0, LossProb: 2, Flows: []FlowSpec{{Kind: CBR}}}, fifoQ(10))
	require.Error(t, err)
	for _, f := range []string{"RateBps", "Duration", "LossProb", "Flows[0].RateBps"} {
		require.Contains(t, err.Error(), f)
	}
}

// TestScenariosExpand protects the named scenarios: each expands into runs
// whose configurations are valid and whose AQMs exist, and the default
// comparison runs every registered AQM.
func TestScenariosExpand(t *testing.T) {
	for _, sc := range Scenarios() {
		runs, err := sc.Runs(Options{Seed: 1})
		require.NoError(t, err, sc.Name)
		require.NotEmpty(t, runs, sc.Name)
		for _, r := range runs {
			c := r.Config
			require.NoError(t, c.normalize(), "%s %s", sc.Name, r.Group)
			_, err := LookupAQM(r.AQM)
			require.NoError(t, err)
		}
	}
	runs, _ := compareScenario.Runs(Options{})
	require.Len(t, runs, len(AQMs()))
}

// TestEveryAQMRuns protects the AQM table: every registered queue builds
// from an Env and carries a short mixed run with sane results.
func TestEveryAQMRuns(t *testing.T) {
	for _, a := range AQMs() {
		t.Run(a.Name, func(t *testing.T) {
			cfg := mixed(1)
			cfg.Duration = 4 * time.Second
			cfg.RateChanges = nil
			r := mustRun(t, cfg, func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
				return a.New(Env{RateBps: cfg.RateBps, MSS: DefaultMSS, MaxRTT: cfg.MaxRTT(), BufferPackets: 300, Seed: 1, OnDrop: d})
			})
			require.Greater(t, r.Utilization, 0.6)
			require.NotZero(t, r.Delay["all"].Count)
		})
	}
}
