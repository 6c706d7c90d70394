package wgtun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/queues"
)

// received is one packet as the wrapper's Read returned it.
type received struct {
	pkt  []byte
	recv time.Duration // since the start of the test
}

// consume calls Read with wireguard-go's buffer shape (MaxBatch buffers,
// offset 16) until it fails, and returns what it read and the error.
func consume(d *Device, start time.Time) ([]received, error) {
	const offset = 16
	bufs := make([][]byte, MaxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, offset+2048)
	}
	sizes := make([]int, MaxBatch)
	var out []received
	for {
		n, err := d.Read(bufs, sizes, offset)
		if err != nil {
			return out, err
		}
		now := time.Since(start)
		for i := range n {
			out = append(out, received{pkt: slices.Clone(bufs[i][offset : offset+sizes[i]]), recv: now})
		}
	}
}

// randomSpec draws a packet of one of 8 flows (IPv4/IPv6, TCP/UDP) with a
// random ECN codepoint, size and IPv4 options.
func randomSpec(r *rand.Rand, id uint64, sent time.Duration) pktSpec {
	flow := r.IntN(8)
	s := pktSpec{
		v6:    flow&1 != 0,
		tcp:   flow&2 != 0,
		sport: uint16(1000 + flow),
		ecn:   aqm.ECN(r.IntN(4)),
		size:  100 + r.IntN(1300),
		id:    id,
		sent:  int64(sent),
	}
	if !s.v6 {
		s.options = 4 * r.IntN(11)
	}
	return s
}

// conservationCase is one configuration TestConservation runs.
type conservationCase struct {
	algo  Algorithm
	rate  aqm.Rate
	marks bool // the queue must mark some ECN-capable packets
}

// conservationCases lists every queue of the registry shaped at 8 Mbit/s
// (overloaded), FIFO and FQ-CoDel unshaped (the direct path), and
// PassThrough.
func conservationCases() []conservationCase {
	var cs []conservationCase
	for _, spec := range queues.List() {
		cs = append(cs, conservationCase{algo: Algorithm(spec.Name), rate: 8 * aqm.Mbit, marks: spec.Marks})
	}
	return append(cs, conservationCase{algo: FIFO}, conservationCase{algo: FQCoDel}, conservationCase{algo: PassThrough})
}

// TestConservation protects the packet accounting and the header
// rewriting, for every queue of the registry, shaped and unshaped, and
// PassThrough: every packet the device returned comes out of Read exactly
// once, unchanged but for CE (set only on ECN-capable packets) and the IPv4
// checksum, which stays valid, or is counted as dropped by the AQM (read =
// delivered + dropped + queued); a queue that marks writes CE into the
// packets; a device failure reaches Read after the queued packets.
func TestConservation(t *testing.T) {
	var allIPv4CE uint64 // over all queues: one queue may mark only a few packets, all IPv6
	defer func() {
		if !t.Failed() && allIPv4CE == 0 {
			t.Error("no marked IPv4 packet left with CE in any queue")
		}
	}()
	for ci, c := range conservationCases() {
		algo := c.algo
		t.Run(fmt.Sprintf("%v/%v", algo, c.rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				fake := newFakeTUN(64, 256)
				// A limit deep enough for the AQMs to act before it does
				// (FQ-PIE's probability starts at zero and waits out a
				// burst allowance), where the rate's default would drop by
				// the limit alone.
				limit := 0
				if c.rate > 0 {
					limit = 1000
				}
				d, err := New(fake, Config{Rate: c.rate, Algorithm: algo, OverheadBytes: OverheadIPv4,
					LimitPackets: limit, Seed: 7, Clock: clock.Since(start)})
				require.NoError(t, err)

				const total = 4000
				sent := make(map[uint64][]byte, total)
				go func() {
					r := rand.New(rand.NewPCG(1, uint64(ci)))
					for id := uint64(0); id < total; {
						for range 1 + r.IntN(32) {
							if id == total {
								break
							}
							p := randomSpec(r, id, time.Since(start)).build()
							sent[id] = p
							fake.in <- p
							id++
						}
						time.Sleep(2 * time.Millisecond)
					}
					close(fake.in)
				}()
				out, rerr := consume(d, start)
				require.ErrorIs(t, rerr, errGone, "the device's failure, after the queue drained")
				require.NoError(t, d.Close())

				st := d.Stats()
				require.EqualValues(t, total, fake.delivered.Load())
				require.Zero(t, st.Len)
				if c.rate > 0 {
					require.Positive(t, st.Dropped().Packets, "the load must overflow the rate")
				}
				require.Equal(t, uint64(total), uint64(len(out))+st.Dropped().Packets+uint64(st.Len), "read = delivered + dropped + queued")
				if algo != PassThrough {
					require.Equal(t, uint64(total), st.Enqueued.Packets+st.Dropped().Packets-st.DroppedQueued.Packets,
						"the queue saw every packet read")
				}

				seen := make(map[uint64]bool, len(out))
				var newlyCE, ipv4CE uint64
				for _, o := range out {
					id, _ := payloadOf(o.pkt)
					require.False(t, seen[id], "packet %d delivered twice", id)
					seen[id] = true
					in := sent[id]
					require.Len(t, o.pkt, len(in))
					inECN, outECN := ecnOf(in), ecnOf(o.pkt)
					if outECN != inECN {
						require.Equal(t, aqm.CE, outECN, "packet %d: ECN may only become CE", id)
						require.Contains(t, []aqm.ECN{aqm.ECT0, aqm.ECT1}, inECN, "packet %d: only ECN-capable packets are marked", id)
						newlyCE++
					}
					want := slices.Clone(in)
					if in[0]>>4 == 4 {
						ihl := int(in[0]&15) * 4
						cs := binary.BigEndian.Uint16(o.pkt[10:])
						require.Equal(t, checksum4(o.pkt[:ihl]), cs, "packet %d: IPv4 checksum after marking", id)
						want[1] = want[1]&^3 | byte(outECN)
						binary.BigEndian.PutUint16(want[10:], cs)
						if outECN != inECN {
							ipv4CE++
						}
					} else {
						want[1] = want[1]&^0x30 | byte(outECN)<<4
					}
					require.Equal(t, want, o.pkt, "packet %d: nothing else changes", id)
				}
				// FQ-PIE marks only while its probability is below 10 %; at
				// this overload it may drop from the start, and the few
				// packets it marks are evicted by the limit before they leave.
				if c.marks && algo != "fq-pie" {
					require.Positive(t, st.Marked.Packets, "the AQM must mark some ECN-capable packets")
					require.Positive(t, newlyCE, "marked packets must leave with CE")
				}
				allIPv4CE += ipv4CE
				require.LessOrEqual(t, newlyCE, st.Marked.Packets)
				metric := metricsOf(d)
				require.EqualValues(t, total, metric["wgtun_read_packets"])
				require.Zero(t, metric["wgtun_unparsed_packets"])
			})
		})
	}
}

// metricsOf collects a Device's metrics by name.
func metricsOf(d *Device) map[string]float64 {
	m := map[string]float64{}
	for x := range d.Metrics() {
		m[x.Name] = x.Value
	}
	return m
}

// TestSparseFlowDelay protects the point of the wrapper: while an
// unresponsive bulk flow offers twice the rate, Read hands out packets at
// the configured rate, the bulk flow's packets wait (the queue is here),
// and a sparse flow's packets leave within about a packet time.
func TestSparseFlowDelay(t *testing.T) {
	for _, algo := range []Algorithm{FQCoDel, DualPI2} {
		t.Run(algo.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					rate     = 8 * aqm.Mbit
					bulkSize = 1000
					duration = 3 * time.Second
					warmup   = time.Second
				)
				start := time.Now()
				fake := newFakeTUN(64, 256)
				d, err := New(fake, Config{Rate: rate, Algorithm: algo, OverheadBytes: OverheadIPv4,
					Seed: 3, Clock: clock.Since(start)})
				require.NoError(t, err)

				// The bulk flow offers twice the rate to FQ-CoDel. DualPI2
				// gets 1.2 times: at twice the rate the coupled L4S
				// probability would exceed 1, and DualPI2's overload rule
				// (RFC 9332) would then drop L4S packets too.
				load := 2.0
				if algo == DualPI2 {
					load = 1.2
				}
				go func() {
					var id uint64
					credit := 0.0
					for tick := 0; time.Since(start) < duration; tick++ {
						now := time.Since(start)
						credit += load * (float64(rate) / 8) / 1000
						for ; credit >= bulkSize+OverheadIPv4; credit -= bulkSize + OverheadIPv4 {
							fake.in <- pktSpec{sport: 1, ecn: aqm.NotECT, size: bulkSize, id: id, sent: int64(now)}.build()
							id++
						}
						if tick%10 == 0 { // sparse: 100 bytes every 10 ms, L4S-capable
							fake.in <- pktSpec{sport: 2, v6: true, ecn: aqm.ECT1, size: 100, id: id, sent: int64(now)}.build()
							id++
						}
						time.Sleep(time.Millisecond)
					}
					require.NoError(t, d.Close())
				}()
				out, rerr := consume(d, start)
				require.ErrorIs(t, rerr, os.ErrClosed)

				var sparse, bulk []time.Duration
				var bytes int64
				for _, o := range out {
					_, sentAt := payloadOf(o.pkt)
					delay := o.recv - time.Duration(sentAt)
					if o.recv >= warmup {
						bytes += int64(len(o.pkt) + OverheadIPv4)
					}
					if time.Duration(sentAt) < warmup {
						continue
					}
					if o.pkt[0]>>4 == 6 {
						sparse = append(sparse, delay)
					} else {
						bulk = append(bulk, delay)
					}
				}
				slices.Sort(sparse)
				slices.Sort(bulk)
				got := float64(bytes*8) / (duration - warmup).Seconds()
				t.Logf("%v: rate %.3f Mbit/s, sparse delay median %v max %v (%d), bulk median %v (%d)",
					algo, got/1e6, sparse[len(sparse)/2], sparse[len(sparse)-1], len(sparse), bulk[len(bulk)/2], len(bulk))
				require.InEpsilon(t, float64(rate), got, 0.02, "Read hands out packets at the rate")
				require.GreaterOrEqual(t, len(sparse), 190, "the sparse flow gets through (200 sent after the warm-up)")
				require.Less(t, sparse[len(sparse)-1], 3*time.Millisecond, "the sparse flow's worst delay")
				require.Greater(t, bulk[len(bulk)/2], 5*time.Millisecond, "the bulk flow must be queued")
			})
		})
	}
}

// TestCloseUnblocksRead protects shutdown: a Read blocked on an empty queue
// returns os.ErrClosed when the wrapper is closed, the device is closed
// once, and Close is idempotent.
func TestCloseUnblocksRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTUN(8, 8)
		d, err := New(fake, Config{Rate: aqm.Mbit, Clock: clock.Since(time.Now())})
		require.NoError(t, err)
		res := make(chan error, 1)
		go func() {
			_, err := d.Read([][]byte{make([]byte, 1500)}, []int{0}, 0)
			res <- err
		}()
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("Read returned %v before Close", err)
		default:
		}
		require.NoError(t, d.Close())
		synctest.Wait()
		select {
		case err := <-res:
			require.ErrorIs(t, err, os.ErrClosed)
		default:
			t.Fatal("Read still blocked after Close")
		}
		require.NoError(t, d.Close())
		require.EqualValues(t, 1, fake.closes.Load())
		_, err = d.Read([][]byte{make([]byte, 1500)}, []int{0}, 0)
		require.ErrorIs(t, err, os.ErrClosed)
	})
}

// TestNoGoroutineLeak protects Close: with the real clock, after traffic
// and a Read blocked during Close, the wrapper leaves no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		fake := newFakeTUN(16, 64)
		d, err := New(fake, Config{})
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(5, 5))
		for id := range uint64(20) {
			fake.in <- randomSpec(r, id, 0).build()
		}
		bufs, sizes := [][]byte{make([]byte, 2048), make([]byte, 2048)}, []int{0, 0}
		got := 0
		for got < 20 {
			n, err := d.Read(bufs, sizes, 0)
			require.NoError(t, err)
			got += n
		}
		res := make(chan error)
		go func() {
			_, err := d.Read(bufs, sizes, 0)
			res <- err
		}()
		require.NoError(t, d.Close())
		require.ErrorIs(t, <-res, os.ErrClosed)
	}
	// Goroutines that have finished their work may take a moment to exit.
	for i := 0; i < 1000 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
}

// TestReadMoreBuffersThanBatch protects the batch contract: wireguard-go
// may pass more buffers than the device's batch size; a shaped Read fills
// up to MaxBatch of them from the queue, and Write and the device's facts
// pass through.
func TestReadMoreBuffersThanBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTUN(4, 256)
		d, err := New(fake, Config{Rate: 100 * aqm.Gbit, LimitPackets: 1000, Clock: clock.Since(time.Now())})
		require.NoError(t, err)
		defer d.Close()
		r := rand.New(rand.NewPCG(9, 9))
		for id := range uint64(200) {
			fake.in <- randomSpec(r, id, 0).build()
		}
		synctest.Wait() // the reader has queued all 200
		bufs := make([][]byte, 300)
		for i := range bufs {
			bufs[i] = make([]byte, 1500)
		}
		sizes := make([]int, 300)
		n, err := d.Read(bufs, sizes, 0)
		require.NoError(t, err)
		require.Equal(t, MaxBatch, n)
		n, err = d.Read(bufs, sizes, 0)
		require.NoError(t, err)
		require.Equal(t, 200-MaxBatch, n)

		require.Equal(t, 4, d.BatchSize())
		mtu, err := d.MTU()
		require.NoError(t, err)
		require.Equal(t, 1420, mtu)
		w := [][]byte{append(make([]byte, 16), 1, 2, 3)}
		_, err = d.Write(w, 16)
		require.NoError(t, err)
		require.Equal(t, [][]byte{{1, 2, 3}}, fake.written, "Write passes through unchanged")
	})
}

// TestShortBuffer protects Read against buffers too small for a packet (or
// an offset past them): the packet is dropped and counted, never a panic.
func TestShortBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTUN(4, 8)
		d, err := New(fake, Config{Clock: clock.Since(time.Now())})
		require.NoError(t, err)
		defer d.Close()
		fake.in <- pktSpec{sport: 1, size: 500}.build()
		fake.in <- pktSpec{sport: 1, size: 100, id: 1}.build()
		synctest.Wait()
		bufs := [][]byte{make([]byte, 200), make([]byte, 200)}
		n, err := d.Read(bufs, []int{0, 0}, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.EqualValues(t, 1, metricsOf(d)["wgtun_dropped_short_buffer_packets"])
		_, err = d.Read(bufs, []int{0, 0}, -1)
		require.Error(t, err)
	})
}

// TestConfigValidate protects configuration errors: every bad field is
// named in one error that wraps aqm.ErrInvalidConfig, and New refuses it.
func TestConfigValidate(t *testing.T) {
	err := Config{Algorithm: "nonsense", OverheadBytes: -1, LimitPackets: -2, MaxPacketBytes: 10}.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, field := range []string{"Algorithm (nonsense)", "OverheadBytes (-1)", "LimitPackets (-2)", "MaxPacketBytes (10)"} {
		require.ErrorContains(t, err, field)
	}
	require.NoError(t, Config{Rate: aqm.Gbit, Algorithm: DualPI2, OverheadBytes: OverheadIPv6}.Validate())
	_, err = New(newFakeTUN(1, 1), Config{OverheadBytes: 5000})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	_, err = New(nil, Config{})
	require.True(t, errors.Is(err, ErrNilDevice))
}
