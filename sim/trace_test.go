package sim

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

// TestParseRateTrace protects the rate format: steps, comments, the end
// that makes the trace repeat, and capacity integrated across steps and
// repetitions.
func TestParseRateTrace(t *testing.T) {
	tr, err := ParseRateTrace("t", strings.NewReader("# comment\n0s 10mbit\n\n2s 0 # outage\n3s 20mbit\n4s end\n"))
	require.NoError(t, err)
	require.Equal(t, 4*time.Second, tr.Period())
	require.InDelta(t, 20e6, tr.BitsBetween(0, 2*time.Second), 1e-3)
	require.InDelta(t, 0, tr.BitsBetween(2*time.Second, 3*time.Second), 1e-3)
	require.InDelta(t, 10e6+20e6, tr.BitsBetween(1500*time.Millisecond, 4500*time.Millisecond), 1e-3)
	require.InDelta(t, 40e6/4, tr.MeanBps(4*time.Second), 1e-3)
	require.InDelta(t, 10*40e6, tr.BitsBetween(0, 40*time.Second), 1e-3)
	lo, hi := tr.WindowBps(time.Second, 4*time.Second)
	require.Equal(t, [2]float64{0, 20e6}, [2]float64{lo, hi})

	// Without an end the last rate holds.
	tr, err = ParseRateTrace("t", strings.NewReader("0s 1mbit\n1s 3mbit\n"))
	require.NoError(t, err)
	require.InDelta(t, 1e6+3e6*9, tr.BitsBetween(0, 10*time.Second), 1e-3)

	for _, bad := range []string{
		"", "1s 10mbit\n", "0s 10mbit\n0s 20mbit\n", "0s fast\n", "0s\n", "x 1mbit\n",
		"0s 1mbit\n1s end\n2s 1mbit\n", "0s 1mbit\n1s 0\n", "0s 0\n1s end\n", "0s 1mbit\n0s end\n", "0s 1mbit 2\n",
	} {
		bt, err := ParseRateTrace("bad", strings.NewReader(bad))
		require.Error(t, err, "%q", bad)
		require.Nil(t, bt, "%q: no trace beside the error", bad)
	}
	bt, err := StepTrace("s", 0, RateChange{At: 0, RateBps: -1})
	require.Error(t, err)
	require.Nil(t, bt, "no trace beside the error")
}

// TestParseDeliveryTrace protects the mahimahi format: one 1500-byte
// opportunity per line, repeated timestamps, the trace repeating after its
// last timestamp.
func TestParseDeliveryTrace(t *testing.T) {
	tr, err := ParseDeliveryTrace("m", strings.NewReader("1\n1\n3\n# c\n4\n"))
	require.NoError(t, err)
	require.Equal(t, 4*time.Millisecond, tr.Period())
	require.InDelta(t, 2*1500*8, tr.BitsBetween(0, 2*time.Millisecond), 1e-9)
	require.InDelta(t, 4*1500*8, tr.BitsBetween(0, 4*time.Millisecond+1), 1e-9)
	require.InDelta(t, 8*1500*8, tr.BitsBetween(0, 8*time.Millisecond+1), 1e-9)
	for _, bad := range []string{"", "0\n", "3\n2\n", "-1\n", "x\n", "1.5\n"} {
		_, err := ParseDeliveryTrace("bad", strings.NewReader(bad))
		require.Error(t, err, "%q", bad)
	}
}

// TestShippedTraces protects the traces the autorate scenario runs on:
// they load, and their shapes are as their README says.
func TestShippedTraces(t *testing.T) {
	got := map[string][3]float64{}
	for _, f := range AutorateTraces {
		tr, err := LoadTrace(filepath.Join("testdata", "traces", f))
		require.NoError(t, err, f)
		lo, hi := tr.WindowBps(time.Second, traceSpan(tr))
		got[tr.Name] = [3]float64{lo / 1e6, tr.MeanBps(traceSpan(tr)) / 1e6, hi / 1e6}
	}
	sd := got["step-down-up"]
	require.InDeltaSlice(t, []float64{10, 30, 40}, sd[:], 1e-9)
	require.InDelta(t, 15.2, got["cellular-fading"][1], 0.2)
	require.Less(t, got["cellular-fading"][0], 3.0)
	require.InDelta(t, 45, got["starlink-15s"][0], 8)
	require.InDelta(t, 120, got["starlink-15s"][2], 15)
	_, err := LoadTrace("x.txt")
	require.Error(t, err)
}

// TestTraceLinkDelivery protects the delivery-opportunity link: a packet
// leaves at the opportunity that completes it, small packets share one,
// an opportunity unused because the link was idle is lost, and the trace
// repeats.
func TestTraceLinkDelivery(t *testing.T) {
	tr, err := ParseDeliveryTrace("m", strings.NewReader("1\n1\n3\n4\n"))
	require.NoError(t, err)
	l := &traceLink{t: tr}
	ms := func(n float64) aqm.Time { return epoch + aqm.Time(n*float64(time.Millisecond)) }
	require.Equal(t, ms(1), l.txEnd(ms(0), 1500))  // the first opportunity
	require.Equal(t, ms(1), l.txEnd(ms(1), 700))   // the second, shared
	require.Equal(t, ms(1), l.txEnd(ms(1), 800))   // ...and its rest
	require.Equal(t, ms(4), l.txEnd(ms(1), 3000))  // needs those at 3 and 4
	require.Equal(t, ms(5), l.txEnd(ms(4.5), 100)) // the repetition: 4 + 1
	require.Equal(t, ms(7), l.txEnd(ms(6), 100))   // the rest at 5 and the second at 5 lost while idle: 4 + 3
	require.Equal(t, ms(7), l.txEnd(ms(7), 1400))  // the rest of the one at 7
	require.Equal(t, ms(8), l.txEnd(ms(8), 100))   // at 8, exactly the second period's end
}

// TestTraceLinkRate protects the rate-trace link: a packet's time is the
// capacity's, across a step and an outage.
func TestTraceLinkRate(t *testing.T) {
	tr, err := StepTrace("s", 0, RateChange{At: 0, RateBps: 12e6}, RateChange{At: time.Millisecond, RateBps: 0}, RateChange{At: 2 * time.Millisecond, RateBps: 6e6})
	require.NoError(t, err)
	l := &traceLink{t: tr}
	// 1500 bytes = 12000 bits: 1 ms at 12 Mbit/s.
	require.Equal(t, epoch.Add(time.Millisecond), l.txEnd(epoch, 1500))
	// 1500 bytes from 0.5 ms: 6000 bits at 12 Mbit/s until 1 ms, none
	// until 2 ms, the other 6000 at 6 Mbit/s: done at 3 ms.
	require.Equal(t, epoch.Add(3*time.Millisecond), l.txEnd(epoch.Add(500*time.Microsecond), 1500))
	require.Equal(t, epoch.Add(4*time.Millisecond), l.txEnd(epoch.Add(2*time.Millisecond), 1500))
}

// TestCapacityRun protects a whole run on a trace: the link never sends
// more than the trace's capacity, bulk TCP uses most of it, and
// utilization is against the trace.
func TestCapacityRun(t *testing.T) {
	tr, err := LoadTrace(filepath.Join("testdata", "traces", "step-down-up.rate"))
	require.NoError(t, err)
	cfg := Config{RateBps: 30e6, Capacity: tr, Duration: 30 * time.Second, Warmup: 2 * time.Second, Seed: 3,
		Flows: []FlowSpec{{Kind: CUBIC, Count: 4, RTT: 20 * time.Millisecond}}}
	s, err := New(cfg, func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fifo.New(fifo.Config{LimitPackets: 500}, onDrop)
	})
	require.NoError(t, err)
	r := s.Run()
	// Goodput is in-order delivery: data held out of order when the
	// warm-up ends is delivered inside the window, so it may exceed what
	// the link sent in the window by that backlog (up to 3%, as
	// TestResultSanity allows).
	require.LessOrEqual(t, r.Utilization, 1.03)
	require.Greater(t, r.Utilization, 0.9)
	sent := r.GoodputMbps * r.MeasuredSeconds * 1e6
	require.LessOrEqual(t, sent, tr.BitsBetween(cfg.Warmup, cfg.Duration)*1.03)

	cfg.RateChanges = []RateChange{{At: time.Second, RateBps: 1e6}}
	_, err = New(cfg, func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) { return fifo.New(fifo.Config{}, onDrop) })
	require.ErrorContains(t, err, "RateChanges")
	cfg.RateChanges = nil
	cfg.Capacity = &Trace{Name: "empty"}
	_, err = New(cfg, func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) { return fifo.New(fifo.Config{}, onDrop) })
	require.ErrorContains(t, err, "Capacity")
}
