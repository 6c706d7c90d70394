package wgtun

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/aqmkit/aqmkit/aqm"
)

// burstTUN hands out the same burst of packets once per permit, copying
// them into the caller's buffers as a kernel read would, without
// allocating.
type burstTUN struct {
	burst   [][]byte
	permits chan struct{}
	closed  chan struct{}
}

func newBurstTUN(n int) *burstTUN {
	f := &burstTUN{permits: make(chan struct{}, 8), closed: make(chan struct{})}
	for i := range n {
		s := pktSpec{v6: i&1 != 0, tcp: i&2 != 0, sport: uint16(i % 16), ecn: aqm.ECT0, size: 1200, id: uint64(i)}
		f.burst = append(f.burst, s.build())
	}
	return f
}

func (f *burstTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	select {
	case <-f.permits:
	case <-f.closed:
		return 0, os.ErrClosed
	}
	n := min(len(bufs), len(f.burst))
	for i := range n {
		sizes[i] = copy(bufs[i][offset:], f.burst[i])
	}
	return n, nil
}

func (f *burstTUN) File() *os.File                   { return nil }
func (f *burstTUN) Write([][]byte, int) (int, error) { return 0, nil }
func (f *burstTUN) MTU() (int, error)                { return 1420, nil }
func (f *burstTUN) Name() (string, error)            { return "burst0", nil }
func (f *burstTUN) Events() <-chan tun.Event         { return nil }
func (f *burstTUN) BatchSize() int                   { return len(f.burst) }
func (f *burstTUN) Close() error                     { close(f.closed); return nil }

// burstRound lets the device read one burst and reads one burst's worth of
// packets out of the wrapper with wireguard-go's buffer shape. The device
// is kept a few bursts ahead of the reader (pipelined, as on a busy
// tunnel), so that a round measures work rather than goroutine wake-ups.
type burstRound struct {
	f     *burstTUN
	d     *Device
	bufs  [][]byte
	sizes []int
}

func newBurstRound(tb testing.TB, algo Algorithm, rate aqm.Rate, n int) *burstRound {
	f := newBurstTUN(n)
	d, err := New(f, Config{Algorithm: algo, Rate: rate, LimitPackets: 1024, Seed: 1})
	require.NoError(tb, err)
	r := &burstRound{f: f, d: d, bufs: make([][]byte, MaxBatch), sizes: make([]int, MaxBatch)}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, 16+1500)
	}
	for range 4 {
		f.permits <- struct{}{}
	}
	return r
}

func (r *burstRound) run() {
	r.f.permits <- struct{}{}
	for got := 0; got < len(r.f.burst); {
		n, err := r.d.Read(r.bufs, r.sizes, 16)
		if err != nil {
			panic(err)
		}
		got += n
	}
}

// pathRates are the two paths: unshaped (Read reads the device itself)
// and shaped at a rate far above the load (the reader goroutine and the
// copy-out).
var pathRates = []aqm.Rate{0, 100 * aqm.Gbit}

// TestSteadyStateAllocs protects the zero-allocation claim: once built,
// reading bursts through the wrapper (the device read, parse, enqueue,
// dequeue and copy-out, on the direct path and on both goroutines of the
// shaped one) allocates nothing.
func TestSteadyStateAllocs(t *testing.T) {
	for _, algo := range []Algorithm{FQCoDel, DualPI2, FIFO} {
		for _, rate := range pathRates {
			r := newBurstRound(t, algo, rate, 64)
			r.run()
			require.Zero(t, testing.AllocsPerRun(200, r.run), "%v at %v", algo, rate)
			require.NoError(t, r.d.Close())
		}
	}
}

// BenchmarkReadPath measures the wrapper's cost per packet, end to end: a
// burst of 64 IPv4/IPv6 TCP/UDP packets of 1200 bytes (16 flows) read from
// a device, classified, queued, dequeued and handed out of Read, unshaped
// (the direct path; FQ-CoDel reorders the flows, so it copies) and shaped
// far above the load (reader goroutine and copy).
func BenchmarkReadPath(b *testing.B) {
	for _, c := range []struct {
		algo Algorithm
		rate aqm.Rate
	}{{FQCoDel, 0}, {FIFO, 0}, {FQCoDel, 100 * aqm.Gbit}, {DualPI2, 100 * aqm.Gbit}} {
		b.Run(fmt.Sprintf("%v/%v", c.algo, c.rate), func(b *testing.B) {
			r := newBurstRound(b, c.algo, c.rate, 64)
			defer r.d.Close()
			b.ReportAllocs()
			for b.Loop() {
				r.run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/packet")
		})
	}
}
