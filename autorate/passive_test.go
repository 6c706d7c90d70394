package autorate

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// seg describes a TCP segment for the tests' packet builder.
type seg struct {
	v6           bool
	src, dst     byte // last byte of each address
	sport, dport uint16
	seq, ack     uint32
	flags        uint8
	ts           bool
	tsval, tsecr uint32
}

// build writes seg as an IPv4 or IPv6 packet with a TCP header (and the
// timestamp option after two no-ops when ts) into buf.
func build(buf []byte, s seg) []byte {
	tcpLen := 20
	if s.ts {
		tcpLen = 32
	}
	ipLen := 20
	if s.v6 {
		ipLen = 40
	}
	b := buf[:ipLen+tcpLen]
	clear(b)
	if s.v6 {
		b[0] = 0x60
		binary.BigEndian.PutUint16(b[4:], uint16(tcpLen))
		b[6], b[7] = 6, 64
		b[8], b[23] = 0x20, s.src
		b[24], b[39] = 0x20, s.dst
	} else {
		b[0] = 0x45
		binary.BigEndian.PutUint16(b[2:], uint16(ipLen+tcpLen))
		b[8], b[9] = 64, 6
		b[12], b[15] = 10, s.src
		b[16], b[19] = 10, s.dst
	}
	t := b[ipLen:]
	binary.BigEndian.PutUint16(t[0:], s.sport)
	binary.BigEndian.PutUint16(t[2:], s.dport)
	binary.BigEndian.PutUint32(t[4:], s.seq)
	binary.BigEndian.PutUint32(t[8:], s.ack)
	t[12] = byte(tcpLen/4) << 4
	t[13] = s.flags
	if s.ts {
		t[20], t[21], t[22], t[23] = 1, 1, 8, 10
		binary.BigEndian.PutUint32(t[24:], s.tsval)
		binary.BigEndian.PutUint32(t[28:], s.tsecr)
	}
	return b
}

// out and in are a LAN host's packet to a WAN server and the reply.
func out(v6 bool, tsval, tsecr uint32) seg {
	return seg{v6: v6, src: 2, dst: 9, sport: 40000, dport: 443, flags: ackFlag, ts: true, tsval: tsval, tsecr: tsecr}
}

func in(v6 bool, tsval, tsecr uint32) seg {
	return seg{v6: v6, src: 9, dst: 2, sport: 443, dport: 40000, flags: ackFlag, ts: true, tsval: tsval, tsecr: tsecr}
}

func newPassive(t *testing.T, cfg PassiveConfig) *PassiveRTT {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 7
	}
	p, err := NewPassiveRTT(cfg)
	require.NoError(t, err)
	return p
}

// TestPassiveTimestamps protects timestamp matching, in IPv4 and IPv6: the
// first outbound packet with a TSval starts the round trip, the first
// inbound echo of it ends it, a second echo gives nothing, and each
// sample's rise is above that flow's own smallest round trip.
func TestPassiveTimestamps(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		p := newPassive(t, PassiveConfig{})
		buf := make([]byte, 128)
		p.Outbound(at(0), build(buf, out(v6, 100, 5)))
		p.Outbound(at(4), build(buf, out(v6, 100, 5))) // same value: not re-timed
		p.Outbound(at(10), build(buf, out(v6, 101, 5)))
		s, ok := p.Inbound(at(30), build(buf, in(v6, 6, 100)))
		require.True(t, ok)
		require.Equal(t, PassiveSample{RTT: 30 * ms, Rise: 0}, s)
		_, ok = p.Inbound(at(35), build(buf, in(v6, 6, 100)))
		require.False(t, ok, "an echo already matched")
		s, ok = p.Inbound(at(60), build(buf, in(v6, 7, 101)))
		require.True(t, ok)
		require.Equal(t, PassiveSample{RTT: 50 * ms, Rise: 20 * ms}, s)
		// Another flow (another port) has its own minimum.
		o := out(v6, 500, 0)
		o.sport = 40001
		r := in(v6, 0, 500)
		r.dport = 40001
		p.Outbound(at(100), build(buf, o))
		s, ok = p.Inbound(at(180), build(buf, r))
		require.True(t, ok)
		require.Equal(t, PassiveSample{RTT: 80 * ms, Rise: 0}, s)
		require.Equal(t, PassiveStats{Samples: 3}, p.Stats())
		require.Equal(t, 2, p.Flows(at(180)))
	}
}

// TestPassiveHandshake protects connections without timestamps: a LAN
// client's SYN is timed to the SYN-ACK, a LAN server's SYN-ACK to the ACK
// of it; a segment acknowledging anything else gives nothing.
func TestPassiveHandshake(t *testing.T) {
	p := newPassive(t, PassiveConfig{})
	buf := make([]byte, 128)
	p.Outbound(at(0), build(buf, seg{src: 2, dst: 9, sport: 5000, dport: 80, seq: 1000, flags: synFlag}))
	_, ok := p.Inbound(at(20), build(buf, seg{src: 9, dst: 2, sport: 80, dport: 5000, seq: 7, ack: 999, flags: synFlag | ackFlag}))
	require.False(t, ok, "acknowledges the wrong sequence number")
	s, ok := p.Inbound(at(42), build(buf, seg{src: 9, dst: 2, sport: 80, dport: 5000, seq: 7, ack: 1001, flags: synFlag | ackFlag}))
	require.True(t, ok)
	require.Equal(t, 42*ms, s.RTT)

	// A server on the LAN: the WAN's SYN creates nothing, our SYN-ACK is
	// timed to the client's ACK.
	_, ok = p.Inbound(at(100), build(buf, seg{src: 9, dst: 3, sport: 6000, dport: 22, seq: 0xfffffff0, flags: synFlag}))
	require.False(t, ok)
	p.Outbound(at(101), build(buf, seg{src: 3, dst: 9, sport: 22, dport: 6000, seq: 0xffffffff, ack: 0xfffffff1, flags: synFlag | ackFlag}))
	s, ok = p.Inbound(at(131), build(buf, seg{src: 9, dst: 3, sport: 6000, dport: 22, seq: 0xfffffff1, ack: 0, flags: ackFlag}))
	require.True(t, ok, "the acknowledgement wraps to 0")
	require.Equal(t, 30*ms, s.RTT)
	require.Equal(t, uint64(2), p.Stats().Handshakes)
}

// TestPassiveWrapAndReorder protects serial arithmetic: values that wrap
// at 2^32 still match; an echo frees the pending values before it (their
// echoes were passed over), so a reordered older echo gives nothing.
func TestPassiveWrapAndReorder(t *testing.T) {
	p := newPassive(t, PassiveConfig{})
	buf := make([]byte, 128)
	p.Outbound(at(0), build(buf, out(false, 0xfffffffe, 0)))
	p.Outbound(at(1), build(buf, out(false, 0xffffffff, 0)))
	p.Outbound(at(2), build(buf, out(false, 1, 0)))
	s, ok := p.Inbound(at(52), build(buf, in(false, 0, 1)))
	require.True(t, ok)
	require.Equal(t, 50*ms, s.RTT)
	require.Equal(t, uint64(2), p.Stats().Expired, "0xfffffffe and 0xffffffff come before 1")
	_, ok = p.Inbound(at(53), build(buf, in(false, 0, 0xffffffff)))
	require.False(t, ok, "a reordered older echo")
}

// TestPassiveAging protects bounded memory: a flow idle for IdleTimeout
// or closed frees its entry, a full table evicts the least recently seen
// flow, a pending value older than MaxRTT is forgotten, and a round trip
// longer than MaxRTT is no sample.
func TestPassiveAging(t *testing.T) {
	p := newPassive(t, PassiveConfig{Flows: 16, IdleTimeout: time.Second, MaxRTT: 500 * ms})
	buf := make([]byte, 128)
	for i := range 40 {
		o := out(false, 1, 0)
		o.sport = uint16(1000 + i)
		p.Outbound(at(i), build(buf, o))
	}
	require.Equal(t, 16, p.Flows(at(40)))
	require.Equal(t, uint64(24), p.Stats().Evicted)
	require.Equal(t, 0, p.Flows(at(1040)), "idle for a second")

	p.Outbound(at(2000), build(buf, out(false, 9, 0)))
	fin := out(false, 10, 0)
	fin.flags |= finFlag
	p.Outbound(at(2001), build(buf, fin))
	require.Equal(t, 0, p.Flows(at(2001)), "closed")
	_, ok := p.Inbound(at(2010), build(buf, in(false, 0, 9)))
	require.False(t, ok)

	p.Outbound(at(3000), build(buf, out(false, 20, 0)))
	_, ok = p.Inbound(at(3600), build(buf, in(false, 0, 20)))
	require.False(t, ok, "longer than MaxRTT")
}

// TestPassiveSkips protects the parser: what is not TCP over IPv4 or
// IPv6, fragments and short packets are skipped without a sample.
func TestPassiveSkips(t *testing.T) {
	p := newPassive(t, PassiveConfig{})
	buf := make([]byte, 128)
	udp := append([]byte(nil), build(buf, out(false, 1, 0))...)
	udp[9] = 17
	frag := append([]byte(nil), build(buf, out(false, 1, 0))...)
	frag[7] = 1
	for _, b := range [][]byte{nil, {0x45}, udp, frag, build(buf, out(false, 1, 0))[:30], {0x60, 0, 0}} {
		p.Outbound(at(0), b)
	}
	require.Equal(t, uint64(6), p.Stats().Skipped)
	require.Equal(t, 0, p.Flows(at(0)))
}

// TestPassiveNoAllocs protects the per-packet path: Outbound and Inbound
// allocate nothing, and an entry is the size the doc states.
func TestPassiveNoAllocs(t *testing.T) {
	p := newPassive(t, PassiveConfig{Flows: 64})
	o, r := build(make([]byte, 128), out(true, 1, 0)), build(make([]byte, 128), in(true, 0, 1))
	now := at(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += aqm.Time(ms)
		binary.BigEndian.PutUint32(o[40+24:], uint32(now))
		binary.BigEndian.PutUint32(r[40+28:], uint32(now))
		p.Outbound(now, o)
		p.Inbound(now+aqm.Time(ms), r)
	})
	require.Zero(t, allocs)
	require.Positive(t, p.Stats().Samples)
	require.Equal(t, uintptr(136), unsafe.Sizeof(passiveFlow{}), "the entry size the doc states")
}

// TestPassiveConfigValidate protects the config's errors: each bad field
// named.
func TestPassiveConfigValidate(t *testing.T) {
	require.NoError(t, PassiveConfig{}.Validate())
	err := PassiveConfig{Flows: 100, IdleTimeout: -1, MaxRTT: time.Hour}.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range []string{"Flows", "IdleTimeout", "MaxRTT"} {
		require.ErrorContains(t, err, f)
	}
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	_, err = NewPassiveRTT(PassiveConfig{Flows: 8})
	require.Error(t, err)
}

// FuzzPassiveRTT protects the parser and the table against any bytes: no
// panic, every sample within MaxRTT with a rise in [0, RTT], the table
// never holding more flows than it has entries.
func FuzzPassiveRTT(f *testing.F) {
	buf := make([]byte, 128)
	o := build(buf, out(false, 1, 0))
	f.Add(append([]byte{0, 10, byte(len(o))}, o...))
	r := build(buf, in(true, 0, 1))
	f.Add(append([]byte{1, 20, byte(len(r))}, r...))
	f.Add([]byte{1, 0, 0x45, 0, 0, 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := NewPassiveRTT(PassiveConfig{Flows: 16, Seed: 1})
		require.NoError(t, err)
		now := at(0)
		// Records: a direction byte, a time step in ms, a length, then the
		// packet.
		for len(data) >= 3 {
			dir, step, n := data[0], data[1], int(data[2])
			data = data[3:]
			n = min(n, len(data))
			pkt := data[:n]
			data = data[n:]
			now += aqm.Time(step) * aqm.Time(ms)
			if dir&1 == 0 {
				p.Outbound(now, pkt)
				continue
			}
			if s, ok := p.Inbound(now, pkt); ok {
				require.LessOrEqual(t, s.RTT, defaultMaxRTT)
				require.GreaterOrEqual(t, s.Rise, time.Duration(0))
				require.LessOrEqual(t, s.Rise, s.RTT)
			}
			require.LessOrEqual(t, p.Flows(now), 16)
		}
	})
}
