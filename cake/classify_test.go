package cake

import (
	"encoding/binary"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// tcpOpts builds TCP options.
type tcpSeg struct {
	sport, dport uint16
	ack          uint32
	flags        uint8
	opts         []byte
	payload      int
	reserved     uint8
}

func (s tcpSeg) bytes() []byte {
	opts := s.opts
	for len(opts)%4 != 0 {
		opts = append(opts, 1)
	}
	b := make([]byte, 20+len(opts)+s.payload)
	binary.BigEndian.PutUint16(b, s.sport)
	binary.BigEndian.PutUint16(b[2:], s.dport)
	binary.BigEndian.PutUint32(b[8:], s.ack)
	b[12] = byte((20+len(opts))/4)<<4 | s.reserved
	b[13] = s.flags
	copy(b[20:], opts)
	return b
}

func ipv4(src, dst [4]byte, proto uint8, tos uint8, l4 []byte) []byte {
	b := make([]byte, 20+len(l4))
	b[0] = 0x45
	b[1] = tos
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8] = 64
	b[9] = proto
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	binary.BigEndian.PutUint16(b[10:], ipv4Checksum(b[:20]))
	copy(b[20:], l4)
	return b
}

func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func ipv6(src, dst [16]byte, next uint8, tc uint8, l4 []byte) []byte {
	b := make([]byte, 40+len(l4))
	b[0] = 0x60 | tc>>4
	b[1] = tc << 4
	binary.BigEndian.PutUint16(b[4:], uint16(len(l4)))
	b[6] = next
	copy(b[8:], src[:])
	copy(b[24:], dst[:])
	copy(b[40:], l4)
	return b
}

var (
	hA = [4]byte{192, 168, 1, 10}
	hB = [4]byte{93, 184, 216, 34}
)

// TestClassifyIPv4 protects the parser on IPv4: DSCP, ECN, size, both
// directions in one flow, host hashes per address, and the TCP summary.
func TestClassifyIPv4(t *testing.T) {
	c := NewClassifier(1, false)
	sack := []byte{5, 18, 0, 0, 0, 100, 0, 0, 0, 200, 0, 0, 1, 0, 0, 0, 2, 0}
	ts := []byte{8, 10, 0, 0, 0, 7, 0, 0, 0, 9}
	seg := tcpSeg{sport: 40000, dport: 443, ack: 12345, flags: flagACK | flagECE, opts: append(append([]byte{1, 1}, ts...), sack...)}
	fwd := ipv4(hA, hB, 6, 46<<2|2, seg.bytes())
	m, info, err := c.Classify(fwd)
	require.NoError(t, err)
	require.Equal(t, uint32(len(fwd)), m.Size)
	require.Equal(t, aqm.ECT0, m.ECN)
	require.Equal(t, uint8(46), info.DSCP)
	a := info.ack
	require.True(t, a.TCP)
	require.Equal(t, uint32(12345), a.Ack)
	require.Equal(t, flagACK|flagECE, a.Flags)
	require.True(t, a.HasTS)
	require.Equal(t, uint32(7), a.TSVal)
	require.Equal(t, uint32(9), a.TSEcr)
	require.Equal(t, uint8(2), a.NSACK)
	require.Equal(t, sackBlock{100, 200}, a.SACK[0])
	require.Equal(t, sackBlock{256, 512}, a.SACK[1])
	require.False(t, a.OtherOptions || a.Payload || a.Reserved)

	rev := ipv4(hB, hA, 6, 0, tcpSeg{sport: 443, dport: 40000, flags: flagACK, payload: 100}.bytes())
	m2, info2, err := c.Classify(rev)
	require.NoError(t, err)
	require.Equal(t, m.Hash, m2.Hash, "both directions share a flow")
	require.NotEqual(t, info.SrcHost, info.DstHost)
	require.NotEqual(t, info.SrcHost, info2.SrcHost)
	// Host hashes follow the address in each role.
	hC := [4]byte{10, 0, 0, 3}
	_, toC, _ := c.Classify(ipv4(hA, hC, 17, 0, make([]byte, 8)))
	_, fromC, _ := c.Classify(ipv4(hC, hB, 17, 0, make([]byte, 8)))
	require.Equal(t, info.SrcHost, toC.SrcHost)
	require.Equal(t, info.DstHost, fromC.DstHost)
	require.NotEqual(t, info.DstHost, toC.DstHost)
	require.NotEqual(t, a.Conn, info2.ack.Conn, "directions differ for the ACK filter")
	require.True(t, info2.ack.Payload)
	// Another port: another flow, same hosts.
	other := ipv4(hA, hB, 6, 0, tcpSeg{sport: 40001, dport: 443, flags: flagACK}.bytes())
	m3, info3, _ := c.Classify(other)
	require.NotEqual(t, m.Hash, m3.Hash)
	require.Equal(t, info.SrcHost, info3.SrcHost)
	// Unknown option, MSS: forbids filtering; reserved bits.
	mss := ipv4(hA, hB, 6, 0, tcpSeg{flags: flagACK, opts: []byte{2, 4, 5, 180}, reserved: 1}.bytes())
	_, info4, _ := c.Classify(mss)
	require.True(t, info4.ack.OtherOptions)
	require.True(t, info4.ack.Reserved)
	// A different key gives different hashes.
	m5, _, _ := NewClassifier(2, false).Classify(fwd)
	require.NotEqual(t, m.Hash, m5.Hash)
}

// TestClassifyIPv6 protects the IPv6 path: traffic class, extension
// headers skipped to the ports, IPv6 in IPv4.
func TestClassifyIPv6(t *testing.T) {
	c := NewClassifier(1, false)
	var s, d [16]byte
	s[0], s[15] = 0x20, 1
	d[0], d[15] = 0x20, 2
	seg := tcpSeg{sport: 1, dport: 2, ack: 99, flags: flagACK}.bytes()
	hop := append([]byte{6, 0, 1, 4, 0, 0, 0, 0}, seg...) // hop-by-hop, then TCP
	p := ipv6(s, d, 0, 8<<2|1, hop)
	m, info, err := c.Classify(p)
	require.NoError(t, err)
	require.Equal(t, uint8(8), info.DSCP)
	require.Equal(t, aqm.ECT1, m.ECN)
	require.True(t, info.ack.TCP)
	require.Equal(t, uint32(99), info.ack.Ack)
	plain := ipv6(s, d, 6, 0, seg)
	m2, _, _ := c.Classify(plain)
	require.Equal(t, m.Hash, m2.Hash)
	// 6in4 carries the inner flow.
	tun := ipv4(hA, hB, 41, 10<<2, plain)
	m3, info3, err := c.Classify(tun)
	require.NoError(t, err)
	require.Equal(t, m.Hash, m3.Hash)
	require.Equal(t, uint8(10), info3.DSCP)
	require.True(t, info3.ack.TCP)
}

// TestClassifyErrors protects bad input: errors, never panics.
func TestClassifyErrors(t *testing.T) {
	c := NewClassifier(1, false)
	for _, p := range [][]byte{nil, {0x45}, {0x10, 0, 0}, make([]byte, 39), append([]byte{0x4f}, make([]byte, 30)...)} {
		_, _, err := c.Classify(p)
		require.Error(t, err)
	}
}

// TestWash protects wash: DSCP cleared, ECN kept, IPv4 checksum valid,
// and the tin chosen from the DSCP read before washing.
func TestWash(t *testing.T) {
	c := NewClassifier(1, true)
	p := ipv4(hA, hB, 17, 46<<2|3, make([]byte, 8))
	_, info, err := c.Classify(p)
	require.NoError(t, err)
	require.Equal(t, uint8(46), info.DSCP)
	require.Equal(t, uint8(3), p[1])
	require.Equal(t, ipv4Checksum(p[:20]), binary.BigEndian.Uint16(p[10:]))
	var s, d [16]byte
	p6 := ipv6(s, d, 17, 46<<2|2, make([]byte, 8))
	_, _, err = c.Classify(p6)
	require.NoError(t, err)
	require.Equal(t, byte(0x60), p6[0])
	require.Equal(t, byte(2<<4), p6[1])
}

// TestClassifyAllocs protects the classifier's zero allocations.
func TestClassifyAllocs(t *testing.T) {
	c := NewClassifier(1, true)
	p := ipv4(hA, hB, 6, 46<<2, tcpSeg{flags: flagACK, opts: []byte{8, 10, 0, 0, 0, 1, 0, 0, 0, 2}}.bytes())
	require.Zero(t, testing.AllocsPerRun(1000, func() { _, _, _ = c.Classify(p) }))
}

// FuzzClassify feeds raw bytes to Classify: it never panics, and a packet
// it parses has the same flow hash as the same packet with source and
// destination (addresses and ports) swapped, but another ACK filter
// connection unless both endpoints are the same.
func FuzzClassify(f *testing.F) {
	f.Add(ipv4(hA, hB, 6, 0, tcpSeg{sport: 1, dport: 2, flags: flagACK, opts: []byte{5, 10, 0, 0, 0, 1, 0, 0, 0, 2}}.bytes()))
	f.Add(ipv6([16]byte{1}, [16]byte{2}, 44, 0, []byte{6, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2}))
	f.Add([]byte{0x45, 0, 0, 20})
	c := NewClassifier(3, false)
	f.Fuzz(func(t *testing.T, p []byte) {
		m, info, err := c.Classify(p)
		if err != nil {
			return
		}
		q := append([]byte(nil), p...)
		if !swapEndpoints(q) {
			return
		}
		m2, info2, err := c.Classify(q)
		if err != nil {
			t.Fatalf("swapped packet failed: %v", err)
		}
		if m.Hash != m2.Hash {
			t.Fatalf("direction changed the flow hash")
		}
		if info.ack.TCP && info2.ack.TCP && info.ack.Conn == info2.ack.Conn && !sameEndpoints(p) {
			t.Fatalf("the two directions share an ACK filter connection")
		}
	})
}

// hasPorts reports an IP protocol whose header starts with a port pair.
func hasPorts(proto uint8) bool {
	switch proto {
	case 6, 17, 33, 132, 136: // TCP, UDP, DCCP, SCTP, UDP-Lite
		return true
	}
	return false
}

// sameEndpoints reports a packet whose source and destination address
// (and, for a port protocol right after the base header, port) are equal.
func sameEndpoints(p []byte) bool {
	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&15) * 4
		return string(p[12:16]) == string(p[16:20]) && (len(p) < ihl+4 || string(p[ihl:ihl+2]) == string(p[ihl+2:ihl+4]))
	case 6:
		return string(p[8:24]) == string(p[24:40]) && (len(p) < 44 || string(p[40:42]) == string(p[42:44]))
	}
	return false
}

// swapEndpoints swaps the addresses (and ports of a plain TCP/UDP header
// right after a base header) of an IP packet in place.
func swapEndpoints(p []byte) bool {
	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&15) * 4
		for i := range 4 {
			p[12+i], p[16+i] = p[16+i], p[12+i]
		}
		if p[9] == 41 || p[9] != 6 && p[9] != 17 {
			return p[9] != 41 && p[9] != 51 && !hasPorts(p[9]) // AH: the ports behind it stay unswapped
		}
		if len(p) >= ihl+4 {
			p[ihl], p[ihl+1], p[ihl+2], p[ihl+3] = p[ihl+2], p[ihl+3], p[ihl], p[ihl+1]
		}
		return true
	case 6:
		for i := range 16 {
			p[8+i], p[24+i] = p[24+i], p[8+i]
		}
		if p[6] != 6 && p[6] != 17 {
			return !hasPorts(p[6]) && p[6] != 0 && p[6] != 43 && p[6] != 60 && p[6] != 44 && p[6] != 51
		}
		if len(p) >= 44 {
			p[40], p[41], p[42], p[43] = p[42], p[43], p[40], p[41]
		}
		return true
	}
	return false
}
