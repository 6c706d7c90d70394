package queues_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/queues"
)

// ipv4 writes into b an IPv4 UDP packet of size bytes from 10.0.0.1:sport
// to 10.0.1.1:9 with the given DS byte (DSCP << 2 | ECN) and a valid header
// checksum, and returns it.
func ipv4(b []byte, sport uint16, ds byte, size int) []byte {
	b = b[:size]
	clear(b)
	b[0], b[1] = 0x45, ds
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	b[8], b[9] = 64, 17
	copy(b[12:], []byte{10, 0, 0, 1, 10, 0, 1, 1})
	binary.BigEndian.PutUint16(b[10:], ^sum16(b[:20]))
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], 9)
	binary.BigEndian.PutUint16(b[24:], uint16(size-20))
	return b
}

// sum16 is the ones'-complement sum of b's 16-bit words (RFC 1071).
func sum16(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestNewIPEveryName protects NewIP over the whole registry: every queue
// builds behind an IP front, the front shapes to Options.Rate except in
// front of a queue that shapes itself (CAKE), whose front runs at rate 0,
// and a front rate in cfg or an unknown name is refused.
func TestNewIPEveryName(t *testing.T) {
	for _, s := range queues.List() {
		f, err := queues.NewIP(s.Name, queues.Options{Rate: 20 * aqm.Mbit, Seed: 3}, clock.NewManual(clock.Epoch), front.IPConfig{})
		require.NoError(t, err, s.Name)
		want := 20 * aqm.Mbit
		if s.Shapes {
			want = 0
		}
		assert.Equal(t, want, f.Config().Rate, s.Name)
		f.Close()
	}
	_, err := queues.NewIP("fq-codel", queues.Options{}, nil, front.IPConfig{Config: front.Config{Rate: aqm.Mbit}})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	_, err = queues.NewIP("nope", queues.Options{}, nil, front.IPConfig{})
	require.ErrorIs(t, err, queues.ErrUnknown)
}

// TestNewIPMarksOnTheWire protects the packet path end to end: a standing
// queue of ECN-capable packets behind FQ-CoDel comes out of the IP front
// with CE written into the IP header and the header checksum still valid,
// and every buffer returns to the pool.
func TestNewIPMarksOnTheWire(t *testing.T) {
	clk := clock.NewManual(clock.Epoch)
	f, err := queues.NewIP("fq-codel", queues.Options{Seed: 1}, clk, front.IPConfig{})
	require.NoError(t, err)
	pool := f.Config().Pool
	const n = 400
	for i := range n {
		b := pool.Get()
		b.B = ipv4(b.B[:cap(b.B)], uint16(1000+i%4), 0x02, 1200) // ECT(0)
		v, err := f.Enqueue(b)
		require.NoError(t, err)
		require.True(t, v.Accepted())
	}
	ce := 0
	bs := make([]*front.Buf, 16)
	for k := 0; f.Stats().Len > 0; k++ {
		clk.Advance(10 * time.Millisecond) // every packet has waited far above CoDel's target
		m, _ := f.TryDequeueBatch(bs)
		for _, b := range bs[:m] {
			require.Equal(t, uint16(0xffff), sum16(b.B[:20]), "the checksum is fixed with the mark")
			if b.B[1]&3 == 3 {
				ce++
			}
			pool.Put(b)
		}
		require.Less(t, k, 10*n, "the queue drains")
	}
	assert.Positive(t, ce, "CoDel's marks reach the wire")
	assert.Equal(t, uint64(ce), f.Detail().RewrittenCE.Packets, "each mark was written once")
	ps := pool.Stats()
	assert.EqualValues(t, ps.Allocated, ps.Free, "every buffer is back in the pool")
}

// TestNewIPCakeSeesDSCP protects the classifier choice: behind NewIP, CAKE
// classifies the packets itself, so an EF packet lands in its Voice tin and
// a best-effort one does not; iphdr's hash alone would give CAKE no DSCP.
func TestNewIPCakeSeesDSCP(t *testing.T) {
	clk := clock.NewManual(clock.Epoch)
	f, err := queues.NewIP("cake", queues.Options{Rate: 10 * aqm.Mbit, Seed: 1}, clk, front.IPConfig{})
	require.NoError(t, err)
	for i, ds := range []byte{46 << 2, 0, 46 << 2, 0} {
		b := f.Config().Pool.Get()
		b.B = ipv4(b.B[:cap(b.B)], uint16(2000+i), ds, 500)
		_, err := f.Enqueue(b)
		require.NoError(t, err)
	}
	var voice, other uint64
	f.(*front.IP[cake.Info]).WithQueue(func(q aqm.Queue[*front.Buf]) {
		d := q.(*cake.Queue[*front.Buf]).Detail()
		for _, tin := range d.Tins[:d.NumTins] {
			if tin.Name == "Voice" {
				voice += tin.Packets
			} else {
				other += tin.Packets
			}
		}
	})
	assert.EqualValues(t, 2, voice, "EF to the Voice tin")
	assert.EqualValues(t, 2, other)
	f.Close()
}
