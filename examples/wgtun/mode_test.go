package wgtun

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/queues"
)

// TestModeSwitch protects ordering and accounting across SetRate: while
// the rate flips between shaped and unshaped (the direct path) under load,
// a FIFO hands the packets out in exactly the order the device read them,
// FQ-CoDel keeps each flow's order, and every packet read is delivered,
// dropped or still queued.
func TestModeSwitch(t *testing.T) {
	for _, algo := range []Algorithm{FIFO, FQCoDel} {
		t.Run(algo.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				fake := newFakeTUN(16, 256)
				d, err := New(fake, Config{Rate: 8 * aqm.Mbit, Algorithm: algo, LimitPackets: 200, Seed: 5, Clock: clock.Since(start)})
				require.NoError(t, err)
				const total = 6000
				go func() {
					r := rand.New(rand.NewPCG(2, 2))
					for id := uint64(0); id < total; {
						for range 1 + r.IntN(16) {
							if id < total {
								fake.in <- randomSpec(r, id, 0).build()
								id++
							}
						}
						if id%500 < 16 { // about every 500 packets, flip the mode
							if id/500%2 == 0 {
								d.SetRate(8 * aqm.Mbit)
							} else {
								d.SetRate(0)
							}
						}
						time.Sleep(time.Millisecond)
					}
					close(fake.in)
				}()
				out, rerr := consume(d, start)
				require.ErrorIs(t, rerr, errGone)
				require.NoError(t, d.Close())
				st := d.Stats()
				require.Equal(t, uint64(total), uint64(len(out))+st.Dropped().Packets+uint64(st.Len), "read = delivered + dropped + queued")
				mt := metricsOf(d)
				require.Positive(t, mt["wgtun_direct_reads"], "some reads took the direct path")
				require.Positive(t, st.Dropped().Packets, "some shaped periods overflowed the queue")
				last := map[uint16]int64{}
				prev := int64(-1)
				for _, o := range out {
					id, _ := payloadOf(o.pkt)
					flow := flowOf(o.pkt)
					if l, ok := last[flow]; ok {
						require.Greater(t, int64(id), l, "flow %d out of order", flow)
					}
					last[flow] = int64(id)
					if algo == FIFO {
						require.Greater(t, int64(id), prev, "FIFO out of order")
						prev = int64(id)
					}
				}
			})
		})
	}
}

// flowOf returns the source port a test packet carries.
func flowOf(b []byte) uint16 {
	hdr := int(b[0]&15) * 4
	if b[0]>>4 == 6 {
		hdr = 40
	}
	return uint16(b[hdr])<<8 | uint16(b[hdr+1])
}

// TestDirectInPlace protects the direct path's copies: with wireguard-go's
// offset and buffers, a burst of one flow stays where the device put it
// (nothing copied); a burst of many flows that FQ-CoDel reorders comes out
// whole, each flow in order; with an offset below 16 every packet is read
// into the wrapper's buffers and copied.
func TestDirectInPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTUN(64, 256)
		d, err := New(fake, Config{Seed: 1, Clock: clock.Since(time.Now())})
		require.NoError(t, err)
		defer d.Close()
		bufs := make([][]byte, MaxBatch)
		for i := range bufs {
			bufs[i] = make([]byte, 16+1500)
		}
		sizes := make([]int, MaxBatch)
		readBurst := func(specs []pktSpec, offset int) [][]byte {
			t.Helper()
			for _, s := range specs {
				fake.in <- s.build()
			}
			n, err := d.Read(bufs, sizes, offset)
			require.NoError(t, err)
			got := make([][]byte, n)
			for i := range n {
				got[i] = bufs[i][offset : offset+sizes[i]]
			}
			return got
		}
		var one []pktSpec
		for i := range 40 {
			one = append(one, pktSpec{tcp: true, sport: 7, size: 1400, id: uint64(i)})
		}
		got := readBurst(one, 16)
		require.Len(t, got, 40)
		for i, p := range got {
			id, _ := payloadOf(p)
			require.EqualValues(t, i, id)
		}
		require.Zero(t, metricsOf(d)["wgtun_copied_packets"], "one flow, in place")
		require.EqualValues(t, 1, metricsOf(d)["wgtun_direct_reads"])

		var many []pktSpec
		for i := range 40 {
			many = append(many, pktSpec{sport: uint16(i % 5), size: 200 + i, id: uint64(100 + i)})
		}
		got = readBurst(many, 16)
		require.Len(t, got, 40)
		moved := false
		last := map[uint16]uint64{}
		for i, p := range got {
			id, _ := payloadOf(p)
			require.Equal(t, many[id-100].build(), p, "packet %d whole", id)
			if l, ok := last[flowOf(p)]; ok {
				require.Greater(t, id, l)
			}
			last[flowOf(p)] = id
			moved = moved || id != uint64(100+i)
		}
		require.True(t, moved, "FQ-CoDel interleaves the flows")
		require.EqualValues(t, 40, metricsOf(d)["wgtun_copied_packets"])

		got = readBurst(one[:10], 0)
		require.Len(t, got, 10)
		require.EqualValues(t, 50, metricsOf(d)["wgtun_copied_packets"], "offset 0: through the wrapper's buffers")
		st := d.Stats()
		require.EqualValues(t, 90, st.Enqueued.Packets, "the queue saw every packet")
		require.EqualValues(t, 90, st.Dequeued.Packets)
	})
}

// TestWriteOffset protects Write on a device with offloads: an offset
// below the virtio-net header, negative, or past a buffer is refused with
// ErrWriteOffset and nothing reaches the device; a device that does not
// batch takes offset 0.
func TestWriteOffset(t *testing.T) {
	fake := newFakeTUN(4, 4) // batches: a Linux TUN with offloads
	d, err := New(fake, Config{Algorithm: PassThrough})
	require.NoError(t, err)
	defer d.Close()
	pkt := [][]byte{make([]byte, 40)}
	for _, off := range []int{-1, 0, VirtioNetHdrBytes - 1, 41} {
		_, err := d.Write(pkt, off)
		require.ErrorIs(t, err, ErrWriteOffset, "offset %d", off)
	}
	require.Empty(t, fake.written)
	_, err = d.Write(pkt, VirtioNetHdrBytes)
	require.NoError(t, err)
	require.Len(t, fake.written, 1)

	single := newFakeTUN(1, 4)
	d1, err := New(single, Config{Algorithm: PassThrough})
	require.NoError(t, err)
	defer d1.Close()
	_, err = d1.Write(pkt, 0)
	require.NoError(t, err)
	require.Len(t, single.written, 1)
}

// TestPassThrough protects the mode without a queue: Read returns the
// device's packets as they are, counts them, keeps no Stats, and Close
// ends a blocked Read.
func TestPassThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTUN(8, 16)
		d, err := New(fake, Config{Algorithm: PassThrough})
		require.NoError(t, err)
		want := pktSpec{ecn: aqm.ECT0, size: 300, id: 3}.build()
		fake.in <- want
		bufs, sizes := [][]byte{make([]byte, 16+1500)}, []int{0}
		n, err := d.Read(bufs, sizes, 16)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, want, bufs[0][16:16+sizes[0]])
		require.Equal(t, aqm.Stats{}, d.Stats())
		require.EqualValues(t, 1, metricsOf(d)["wgtun_read_packets"])
		res := make(chan error)
		go func() { _, err := d.Read(bufs, sizes, 16); res <- err }()
		synctest.Wait()
		require.NoError(t, d.Close())
		require.ErrorIs(t, <-res, os.ErrClosed)
	})
}

// TestAlgorithmNames protects the choice of queue by name: every registry
// name and PassThrough parse as an Algorithm (in tc's spelling too) and
// build a Device; an unknown name is an error that lists the names.
func TestAlgorithmNames(t *testing.T) {
	for _, name := range append(queues.Names(), "pass-through", "FQ_CODEL") {
		var a Algorithm
		require.NoError(t, a.Set(name))
		require.Equal(t, strings.ReplaceAll(strings.ToLower(name), "_", "-"), a.String())
		d, err := New(newFakeTUN(4, 4), Config{Algorithm: a})
		require.NoError(t, err, name)
		require.NoError(t, d.Close())
	}
	var a Algorithm
	err := a.Set("fq-codle")
	require.ErrorIs(t, err, queues.ErrUnknown)
	require.ErrorContains(t, err, "pass-through")
	require.Equal(t, "fq-codel", Algorithm("").String())
}

// TestConfigQueueErrors protects the queue's own settings: a bad Params
// name or value, DisableECN on a queue that cannot turn marking off, a
// Params limit out of range, and shaping settings with PassThrough are
// errors that name the field and wrap aqm.ErrInvalidConfig.
func TestConfigQueueErrors(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Params: "nonsense=1"}, "Params"},
		{Config{Params: "target=soon"}, "Target"},
		{Config{Algorithm: DualPI2, DisableECN: true}, "DisableECN"},
		{Config{Params: "limit-packets=0"}, "Params"},
		{Config{Algorithm: "fifo", Params: "limitpackets=2000000"}, "Params"},
		{Config{Algorithm: PassThrough, Rate: aqm.Mbit}, "Rate"},
		{Config{Algorithm: PassThrough, Params: "target=1ms"}, "Params"},
	} {
		err := c.cfg.Validate()
		require.ErrorIs(t, err, aqm.ErrInvalidConfig, "%+v", c.cfg)
		var ce *aqm.ConfigError
		require.True(t, errors.As(err, &ce), "%v", err)
		require.ErrorContains(t, err, c.field)
		_, err = New(newFakeTUN(1, 1), c.cfg)
		require.Error(t, err)
	}
	require.NoError(t, Config{Algorithm: FQCoDel, Params: "target=10ms,interval=200ms"}.Validate())
}

// TestOwnMetricNames protects the wrapper's metric names: each begins
// wgtun_, is lower_snake_case, ends in a unit or a plural event noun, never
// meets a name of the queue or the front, and is a counter.
func TestOwnMetricNames(t *testing.T) {
	d, err := New(newFakeTUN(4, 4), Config{})
	require.NoError(t, err)
	defer d.Close()
	seen := map[string]bool{}
	own := 0
	for m := range d.Metrics() {
		require.False(t, seen[m.Name], "%q twice", m.Name)
		seen[m.Name] = true
		if !strings.HasPrefix(m.Name, "wgtun_") {
			continue
		}
		own++
		require.Regexp(t, `^[a-z]+(_[a-z]+)+$`, m.Name)
		require.Regexp(t, `_(packets|reads)$`, m.Name)
		require.NotRegexp(t, `_(drop|mark)_`, m.Name, "events lead with a past participle")
		require.Equal(t, aqm.Counter, m.Kind, m.Name)
	}
	require.Equal(t, 6, own)
}

// TestSetRateSelfShaping protects SetRate on a queue that paces itself
// (CAKE): the rate goes to the queue, not to the front, so doubling it
// doubles what Read hands out under an overload, and the wrapper never
// takes the direct path.
func TestSetRateSelfShaping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 8 * aqm.Mbit
		start := time.Now()
		fake := newFakeTUN(64, 256)
		d, err := New(fake, Config{Rate: rate, Algorithm: "cake", LimitPackets: 2000, Seed: 3, Clock: clock.Since(start)})
		require.NoError(t, err)
		go func() {
			var id uint64
			for time.Since(start) < 4*time.Second {
				for range 6 { // 6 × 1000 bytes a millisecond: 48 Mbit/s
					fake.in <- pktSpec{sport: uint16(id % 4), size: 1000, id: id}.build()
					id++
				}
				if time.Since(start) >= 2*time.Second && time.Since(start) < 2*time.Second+time.Millisecond {
					d.SetRate(2 * rate)
				}
				time.Sleep(time.Millisecond)
			}
			require.NoError(t, d.Close())
		}()
		out, rerr := consume(d, start)
		require.ErrorIs(t, rerr, os.ErrClosed)
		var first, second int
		for _, o := range out {
			switch {
			case o.recv >= time.Second && o.recv < 2*time.Second:
				first += len(o.pkt)
			case o.recv >= 3*time.Second && o.recv < 4*time.Second:
				second += len(o.pkt)
			}
		}
		t.Logf("%.2f then %.2f Mbit/s", float64(first*8)/1e6, float64(second*8)/1e6)
		require.InEpsilon(t, 2.0, float64(second)/float64(first), 0.1, "the rate doubled")
		require.InEpsilon(t, (float64(rate) / 8), float64(first), 0.1, "CAKE shapes at the configured rate")
		require.Zero(t, metricsOf(d)["wgtun_direct_reads"])
	})
}
