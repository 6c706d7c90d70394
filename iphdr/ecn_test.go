package iphdr

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// checksumOK reports whether an IPv4 header's checksum field equals a full
// recomputation (RFC 791: the ones'-complement of the ones'-complement sum
// of the header with the field taken as zero).
func checksumOK(hdr []byte) bool {
	c := append([]byte(nil), hdr...)
	fixChecksum(c)
	return c[10] == hdr[10] && c[11] == hdr[11]
}

// eqn3 is RFC 1624 Eqn 3 written out generically: HC' = ~(~HC + ~m + m'),
// in 32-bit arithmetic folded twice, for a change of the 16-bit word m to m2.
func eqn3(hc, m, m2 uint16) uint16 {
	s := uint32(^hc) + uint32(^m) + uint32(m2)
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return ^uint16(s)
}

// eqn2 is RFC 1141's older update, HC' = HC + m + ~m', kept here only to
// show that the -0 test below tells it apart from the correct update.
func eqn2(hc, m, m2 uint16) uint16 {
	s := uint32(hc) + uint32(m) + uint32(^m2)
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}

// requireSetCE checks SetCE on one packet against the rules: which bytes
// may change, to what, and with which result.
func requireSetCE(t testing.TB, pkt []byte) {
	t.Helper()
	before := append([]byte(nil), pkt...)
	_, _, _, cerr := check(before)
	err := SetCE(pkt)
	if cerr != nil {
		require.ErrorIs(t, err, cerr)
		require.True(t, bytes.Equal(before, pkt), "modified: % x", pkt)
		return
	}
	v6 := before[0]>>4 == 6
	e := before[1] & 3
	if v6 {
		e = before[1] >> 4 & 3
	}
	switch e {
	case 0:
		require.ErrorIs(t, err, ErrNotECT)
		require.True(t, bytes.Equal(before, pkt), "modified: % x", pkt)
		return
	case 3:
		require.NoError(t, err)
		require.True(t, bytes.Equal(before, pkt), "modified: % x", pkt)
		return
	}
	require.NoError(t, err)
	want := append([]byte(nil), before...)
	if v6 {
		want[1] |= 0x30
	} else {
		want[1] |= 3
		hc := binary.BigEndian.Uint16(before[10:12])
		m := binary.BigEndian.Uint16(before[0:2])
		binary.BigEndian.PutUint16(want[10:12], eqn3(hc, m, m|3))
		hlen := int(before[0]&0xf) * 4
		if checksumOK(before[:hlen]) {
			require.True(t, checksumOK(pkt[:hlen]), "a valid checksum stays valid: % x", pkt[:hlen])
		}
	}
	require.Equal(t, want, pkt)
	got, err := ECN(pkt)
	require.NoError(t, err)
	require.Equal(t, aqm.CE, got)
}

// SetCE marks ECT packets of both families, leaves CE and (with an error)
// Not-ECT alone, and never touches the DSCP.
func TestSetCE(t *testing.T) {
	for _, tos := range []byte{0, 1, 2, 3, 0xb8, 0xb9, 0xba, 0xbb, 0xfd, 0xfe} {
		for _, opts := range [][]byte{nil, {1, 1, 1, 0}, make([]byte, 40)} {
			p := v4(tos, 6, srcA4, dstB4, 0x4000, opts, tcp(1, 2, data(30)))
			requireSetCE(t, p)
			d, err := DSCP(p)
			require.NoError(t, err)
			require.Equal(t, tos>>2, d)
		}
		p := v6(tos, 0xabcde, 6, srcA6, dstB6, tcp(1, 2, nil))
		requireSetCE(t, p)
		d, err := DSCP(p)
		require.NoError(t, err)
		require.Equal(t, tos>>2, d)
		require.Equal(t, uint32(0xabcde), binary.BigEndian.Uint32(p)&0xfffff, "flow label untouched")
	}
	require.ErrorIs(t, SetCE(v4(0xb8, 6, srcA4, dstB4, 0, nil, nil)), ErrNotECT)
	require.NoError(t, SetCE(v4(0xbb, 6, srcA4, dstB4, 0, nil, nil)))
}

// findHeader returns an ECN-capable IPv4 header (tos's ECN bits) whose
// valid checksum is exactly hc, by searching the ID field.
func findHeader(t *testing.T, tos byte, hc uint16) []byte {
	for id := range 1 << 16 {
		p := v4(tos, 17, srcA4, dstB4, 0, nil, nil)
		binary.BigEndian.PutUint16(p[4:], uint16(id))
		fixChecksum(p)
		if binary.BigEndian.Uint16(p[10:]) == hc {
			return p
		}
	}
	t.Fatalf("no header with checksum %#x", hc)
	return nil
}

// The ones'-complement -0 pitfall: when the old checksum equals the
// increment d, the new one is 0x0000 (as a full recomputation gives), not
// 0xFFFF; and ECT(1) over a zero checksum wraps to 0xFFFD.
func TestSetCEMinusZero(t *testing.T) {
	for _, c := range []struct {
		tos    byte
		hc, hn uint16
	}{
		{0x02, 0x0001, 0x0000}, // ECT(0): d = 1
		{0x01, 0x0002, 0x0000}, // ECT(1): d = 2
		{0x01, 0x0000, 0xfffd},
		{0x02, 0x0000, 0xfffe},
	} {
		p := findHeader(t, c.tos, c.hc)
		m := binary.BigEndian.Uint16(p[0:2])
		require.NoError(t, SetCE(p))
		require.Equal(t, c.hn, binary.BigEndian.Uint16(p[10:]))
		require.True(t, checksumOK(p))
		if c.hn == 0 {
			require.Equal(t, uint16(0xffff), eqn2(c.hc, m, m|3), "RFC 1141 Eqn 2 would give -0 here")
		}
	}
}

// On many random headers with options and random ECT codepoints, SetCE
// equals Eqn 3 and a full recomputation byte for byte.
func TestSetCERandomHeaders(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	for range n {
		opts := make([]byte, 4*r.IntN(11))
		for i := range opts {
			opts[i] = byte(r.Uint32())
		}
		p := v4(byte(r.Uint32()), byte(r.Uint32()), srcA4, dstB4, uint16(r.Uint32()), opts, nil)
		binary.BigEndian.PutUint64(p[4:12], r.Uint64()) // ID, flags, TTL, protocol, checksum
		binary.BigEndian.PutUint64(p[12:20], r.Uint64())
		if r.IntN(4) != 0 {
			fixChecksum(p)
		} // else: a corrupt checksum, which the update must carry along
		requireSetCE(t, p)
	}
}
