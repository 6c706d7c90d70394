package iphdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// rfc6040Figure4 is RFC 6040's decapsulation table (Figure 4, "New IP in
// IP Decapsulation Behaviour") as the RFC prints it: rows are the arriving
// inner header, columns the arriving outer header, in the RFC's order.
var rfc6040Figure4 = struct {
	cols, rows []string
	cells      [4][4]string
}{
	cols: []string{"Not-ECT", "ECT(0)", "ECT(1)", "CE"},
	rows: []string{"Not-ECT", "ECT(0)", "ECT(1)", "CE"},
	cells: [4][4]string{
		{"Not-ECT", "Not-ECT(!!!)", "Not-ECT(!!!)", "<drop>(!!!)"},
		{"ECT(0)", "ECT(0)", "ECT(1)", "CE"},
		{"ECT(1)", "ECT(1) (!)", "ECT(1)", "CE"},
		{"CE", "CE", "CE(!!!)", "CE"},
	},
}

// tunnelCodepoint reads a codepoint name as the RFC writes it.
func tunnelCodepoint(name string) aqm.ECN {
	switch name {
	case "Not-ECT":
		return aqm.NotECT
	case "ECT(0)":
		return aqm.ECT0
	case "ECT(1)":
		return aqm.ECT1
	case "CE":
		return aqm.CE
	}
	panic("no codepoint " + name)
}

// tunnelModel looks the pair up in rfc6040Figure4: the codepoint the inner
// packet leaves with (inner's own for a drop), whether it is dropped, and
// the cell's mark ("", "(!)" or "(!!!)").
func tunnelModel(outer, inner aqm.ECN) (out aqm.ECN, drop bool, mark string) {
	col, row := -1, -1
	for i, n := range rfc6040Figure4.cols {
		if tunnelCodepoint(n) == outer&aqm.ECNMask {
			col = i
		}
	}
	for i, n := range rfc6040Figure4.rows {
		if tunnelCodepoint(n) == inner&aqm.ECNMask {
			row = i
		}
	}
	cell := rfc6040Figure4.cells[row][col]
	for _, m := range []string{"(!!!)", "(!)"} {
		if c, ok := strings.CutSuffix(cell, m); ok {
			cell, mark = strings.TrimSpace(c), m
			break
		}
	}
	if cell == "<drop>" {
		return inner & aqm.ECNMask, true, mark
	}
	return tunnelCodepoint(cell), false, mark
}

// tunnelClass is the decap the package should give a model cell.
func tunnelClass(drop bool, mark string) decap {
	switch {
	case drop:
		return decapDrop
	case mark == "(!!!)":
		return decapSuspect
	case mark == "(!)":
		return decapUnusual
	}
	return decapNormal
}

var allECN = []aqm.ECN{aqm.NotECT, aqm.ECT1, aqm.ECT0, aqm.CE}

// TestDecapECNTable protects RFC 6040's decapsulation table: every one of
// the 16 pairs gives the codepoint and the class of the RFC's Figure 4,
// and bits above the ECN field make no difference.
func TestDecapECNTable(t *testing.T) {
	for _, o := range allECN {
		for _, i := range allECN {
			want, drop, mark := tunnelModel(o, i)
			got, d := decapECN(o, i)
			require.Equal(t, tunnelClass(drop, mark), d, "outer %v inner %v", o, i)
			require.Equal(t, want, got, "outer %v inner %v", o, i)
			got2, d2 := decapECN(o|0xfc, i|0xa8)
			require.Equal(t, got, got2)
			require.Equal(t, d, d2)
		}
	}
	require.Equal(t, "drop (!!!)", decapDrop.String())
	require.Equal(t, "decap(?)", decap(9).String())
}

// tunnelHeader builds a packet of the given family with DSCP dscp and
// codepoint e, carrying payload (protocol proto); IPv4 gets options when
// opts is set, and a valid checksum.
func tunnelHeader(isV6 bool, dscp byte, e aqm.ECN, proto byte, opts bool, payload []byte) []byte {
	tos := dscp<<2 | byte(e)
	if isV6 {
		return v6(tos, 0x54321, proto, srcA6, dstB6, payload)
	}
	var o []byte
	if opts {
		o = []byte{0x94, 4, 0, 0}
	}
	return v4(tos, proto, srcA4, dstB4, 0x4000, o, payload)
}

// tunnelPacket builds a tunnel packet: an inner UDP packet inside an
// outer IP-in-IP header. With nested, inner is the outer packet's payload
// (one buffer, as received); otherwise a copy of its own.
func tunnelPacket(ov6, iv6, nested, opts bool, oe, ie aqm.ECN, odscp, idscp byte) (outer, inner []byte) {
	in := tunnelHeader(iv6, idscp, ie, 17, opts, udp(4789, 53, data(24)))
	proto := byte(4)
	if iv6 {
		proto = 41
	}
	outer = tunnelHeader(ov6, odscp, oe, proto, opts, in)
	if nested {
		return outer, outer[len(outer)-len(in):]
	}
	return outer, in
}

// tunnelHdrLen is the IP header length of a checked packet.
func tunnelHdrLen(p []byte) int {
	if p[0]>>4 == 6 {
		return 40
	}
	return int(p[0]&0xf) * 4
}

// refECNOf reads the ECN field by the header layouts of RFC 791 and 8200.
func refECNOf(p []byte) aqm.ECN {
	if p[0]>>4 == 6 {
		return aqm.ECN(binary.BigEndian.Uint32(p[0:4])>>20) & 3
	}
	return aqm.ECN(p[1] & 3)
}

// requireECNWritten checks that after is before with its ECN field set to
// want and nothing else changed but the IPv4 header checksum, which
// matches a full recomputation when before's did, and otherwise keeps its
// error: the ones'-complement sum over the header, checksum included, is
// unchanged.
func requireECNWritten(t testing.TB, before, after []byte, want aqm.ECN) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("length %d, was %d", len(after), len(before))
	}
	if got := refECNOf(after); got != want {
		t.Fatalf("ECN %v, want %v: % x", got, want, after)
	}
	v6 := before[0]>>4 == 6
	for i := range before {
		if i == 1 || !v6 && (i == 10 || i == 11) {
			continue
		}
		if before[i] != after[i] {
			t.Fatalf("byte %d changed: % x to % x", i, before, after)
		}
	}
	if v6 {
		if before[1]&^0x30 != after[1]&^0x30 {
			t.Fatalf("traffic class outside ECN changed: %#x to %#x", before[1], after[1])
		}
		return
	}
	if before[1]&^3 != after[1]&^3 {
		t.Fatalf("DSCP changed: %#x to %#x", before[1], after[1])
	}
	hlen := tunnelHdrLen(before)
	switch {
	case refECNOf(before) == want:
		if before[10] != after[10] || before[11] != after[11] {
			t.Fatalf("checksum updated though nothing changed: % x to % x", before[10:12], after[10:12])
		}
	case sum16(before[:hlen]) == 0xffff: // verified before: must equal a recompute
		if !checksumOK(after[:hlen]) {
			t.Fatalf("checksum %x is not a full recomputation's: % x", after[10:12], after[:hlen])
		}
	default:
		if b, a := sum16(before[:hlen]), sum16(after[:hlen]); b%0xffff != a%0xffff {
			t.Fatalf("the header's error is not carried through: sum %#x, was %#x", a, b)
		}
	}
}

// TestDecapsulateHeaders protects Decapsulate on real headers: IPv4 and
// IPv6 in all four inner/outer combinations, with and without IPv4
// options, inner inside outer's buffer or apart, and every codepoint
// pair: the inner packet leaves with the table's codepoint and class (a
// marked cell is suspect), its
// DSCP and every other byte kept, its IPv4 checksum equal to a full
// recomputation; a drop leaves it unchanged; outer is only read.
func TestDecapsulateHeaders(t *testing.T) {
	cases := 0
	for _, fam := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		for _, nested := range []bool{false, true} {
			for _, opts := range []bool{false, true} {
				for _, oe := range allECN {
					for _, ie := range allECN {
						outer, inner := tunnelPacket(fam[0], fam[1], nested, opts, oe, ie, 46, 10)
						ob, ib := bytes.Clone(outer), bytes.Clone(inner)
						want, drop, mark := tunnelModel(oe, ie)
						d, err := decapsulate(outer, inner)
						name := fmt.Sprintf("v6 %v/%v nested %v opts %v outer %v inner %v", fam[0], fam[1], nested, opts, oe, ie)
						require.Equal(t, tunnelClass(drop, mark), d, name)
						if drop {
							require.ErrorIs(t, err, ErrDecapDrop, name)
							require.Equal(t, ib, inner, name)
						} else {
							require.NoError(t, err, name)
							requireECNWritten(t, ib, inner, want)
						}
						hl := tunnelHdrLen(ob)
						require.Equal(t, ob[:hl], outer[:hl], name)
						if !nested {
							require.Equal(t, ob, outer, name)
						}
						o2, i2 := tunnelPacket(fam[0], fam[1], nested, opts, oe, ie, 46, 10)
						suspect, err2 := Decapsulate(o2, i2)
						require.Equal(t, drop || mark != "", suspect, name)
						require.Equal(t, err, err2, name)
						require.Equal(t, inner, i2, name)
						cases++
					}
				}
			}
		}
	}
	require.Equal(t, 4*2*2*16, cases)
}

// TestEncapsulateHeaders protects Encapsulate (normal mode): the outer
// header takes the inner packet's codepoint, CE included, whatever it held
// before, in all four family combinations, keeping its DSCP and every
// other byte, its IPv4 checksum equal to a full recomputation; the inner
// packet is only read.
func TestEncapsulateHeaders(t *testing.T) {
	for _, fam := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		for _, nested := range []bool{false, true} {
			for _, opts := range []bool{false, true} {
				for _, oe := range allECN {
					for _, ie := range allECN {
						outer, inner := tunnelPacket(fam[0], fam[1], nested, opts, oe, ie, 0, 34)
						ob, ib := bytes.Clone(outer), bytes.Clone(inner)
						require.NoError(t, Encapsulate(outer, inner))
						hl := tunnelHdrLen(ob)
						requireECNWritten(t, ob[:hl], outer[:hl], ie)
						require.Equal(t, ob[hl:], outer[hl:])
						require.Equal(t, ib, inner)
					}
				}
			}
		}
	}
}

// TestTunnelNegativeZero protects the checksum update's two zeros: for
// every change of the IPv4 ECN field, a header built so that the new
// checksum is 0x0000 gets 0x0000 (what a full recomputation gives), not
// the negative zero 0xFFFF that RFC 1141's older formula gives; and a
// header that carries 0xFFFF is left alone when its codepoint stays.
func TestTunnelNegativeZero(t *testing.T) {
	// zeroAfter returns an IPv4 header with codepoint from and a valid
	// checksum, whose ID makes the checksum 0x0000 once the codepoint is to.
	zeroAfter := func(from, to aqm.ECN, payload []byte) []byte {
		p := v4(byte(to), 4, srcA4, dstB4, 0, nil, payload)
		binary.BigEndian.PutUint16(p[4:6], 0)
		p[10], p[11] = 0, 0
		binary.BigEndian.PutUint16(p[4:6], ^sum16(p[:20]))
		fixChecksum(p[:20])
		require.Equal(t, []byte{0, 0}, p[10:12])
		p[1] = byte(from)
		fixChecksum(p[:20])
		return p
	}
	inner := func(e aqm.ECN) []byte { return tunnelHeader(false, 0, e, 17, false, udp(1, 2, nil)) }
	n := 0
	for _, from := range allECN {
		for _, to := range allECN {
			if from == to {
				continue
			}
			outer := zeroAfter(from, to, inner(to))
			require.NoError(t, Encapsulate(outer, outer[20:]))
			require.Equal(t, to, refECNOf(outer))
			require.Equal(t, []byte{0, 0}, outer[10:12], "encapsulate %v to %v", from, to)
			n++
			// The same header as an inner packet, where decapsulation
			// makes this change.
			for _, oe := range allECN {
				if want, drop, _ := tunnelModel(oe, from); !drop && want == to {
					in := zeroAfter(from, to, udp(1, 2, nil))
					out := tunnelHeader(true, 0, oe, 4, false, in)
					_, err := Decapsulate(out, out[40:])
					require.NoError(t, err)
					require.Equal(t, []byte{0, 0}, out[50:52], "decapsulate %v under %v", from, oe)
					n++
				}
			}
		}
	}
	require.Equal(t, 12+3, n) // every encapsulation change; decapsulation's three

	// RFC 1624 erratum 4782: a header whose checksum is 0x0000 may carry
	// it as 0xFFFF (it verifies either way); a call that changes no
	// codepoint must leave it so, where running the update anyway would
	// turn it into 0x0000.
	for _, e := range allECN {
		outer := zeroAfter(e, e, inner(e))
		outer[10], outer[11] = 0xff, 0xff
		require.Equal(t, uint16(0xffff), sum16(outer[:20]))
		require.NoError(t, Encapsulate(outer, outer[20:]))
		require.Equal(t, []byte{0xff, 0xff}, outer[10:12], "encapsulate %v", e)
		out := tunnelHeader(true, 0, aqm.NotECT, 4, false, zeroAfter(e, e, udp(1, 2, nil)))
		out[50], out[51] = 0xff, 0xff
		_, err := Decapsulate(out, out[40:])
		require.NoError(t, err)
		require.Equal(t, []byte{0xff, 0xff}, out[50:52], "decapsulate %v", e)
	}
}

// TestTunnelChecksumRandom protects the incremental update on many
// headers: random IPv4 headers (options, every field random) with valid
// checksums come out equal to a full recomputation after every change of
// ECN field, and headers with a wrong checksum keep exactly their error.
func TestTunnelChecksumRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(6040, 1624))
	n := 100000
	if testing.Short() {
		n = 10000
	}
	for k := range n {
		hlen := 20 + 4*r.IntN(11)
		p := make([]byte, hlen+r.IntN(8))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		p[0] = 0x40 | byte(hlen/4)
		binary.BigEndian.PutUint16(p[2:4], uint16(hlen+r.IntN(len(p)-hlen+1)))
		corrupt := k%4 == 3
		fixChecksum(p[:hlen])
		if corrupt {
			p[10] ^= byte(1 + r.IntN(255))
		}
		ie := allECN[r.IntN(4)]
		in := tunnelHeader(true, 0, ie, 17, false, nil)
		before := bytes.Clone(p)
		if err := Encapsulate(p, in); err != nil {
			t.Fatal(err)
		}
		requireECNWritten(t, before, p, ie)
		if !corrupt && !checksumOK(p[:hlen]) {
			t.Fatalf("header %d: checksum % x", k, p[10:12])
		}
	}
}

// TestTunnelInvalid protects bad input: a truncated or non-IP header on
// either side gets the sentinel error check gives it (outer first), and
// neither packet changes.
func TestTunnelInvalid(t *testing.T) {
	good4, _ := tunnelPacket(false, false, false, false, aqm.CE, aqm.ECT0, 0, 0)
	good6, _ := tunnelPacket(true, true, false, false, aqm.CE, aqm.ECT0, 0, 0)
	bad := map[string][]byte{
		"empty": {}, "short4": good4[:19], "cut4": good4[:len(good4)-1], "short6": good6[:39],
		"cut6": good6[:len(good6)-1], "ihl4": append([]byte{0x44}, good4[1:]...), "v5": append([]byte{0x55}, good4[1:]...),
	}
	for name, b := range bad {
		_, _, _, want := check(b)
		require.Error(t, want, name)
		for _, good := range [][]byte{good4, good6} {
			for _, badOuter := range []bool{true, false} {
				o, i := bytes.Clone(good), bytes.Clone(b)
				if badOuter {
					o, i = bytes.Clone(b), bytes.Clone(good)
				}
				ob, ib := bytes.Clone(o), bytes.Clone(i)
				d, err := decapsulate(o, i)
				require.ErrorIs(t, err, want, name)
				require.Equal(t, decapNormal, d)
				require.ErrorIs(t, Encapsulate(o, i), want, name)
				require.Equal(t, ob, o, name)
				require.Equal(t, ib, i, name)
			}
		}
	}
	// Both bad: the outer's error is reported.
	_, err := Decapsulate([]byte{0x55}, []byte{})
	require.ErrorIs(t, err, ErrNotIP)
	require.True(t, errors.Is(Encapsulate([]byte{}, []byte{0x55}), ErrTruncated))
}

// TestTunnelZeroAllocs protects the hot path: neither function allocates,
// on valid pairs of each family, on the drop case, or on invalid input.
func TestTunnelZeroAllocs(t *testing.T) {
	type pair struct{ o, i []byte }
	var pairs []pair
	for _, fam := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		o, i := tunnelPacket(fam[0], fam[1], true, false, aqm.CE, aqm.ECT0, 0, 0)
		pairs = append(pairs, pair{o, i})
		o, i = tunnelPacket(fam[0], fam[1], false, true, aqm.CE, aqm.NotECT, 0, 0)
		pairs = append(pairs, pair{o, i})
	}
	pairs = append(pairs, pair{[]byte{0x45}, nil}, pair{pairs[0].o, []byte{0x60}})
	for k, p := range pairs {
		require.Zero(t, testing.AllocsPerRun(100, func() { sinkErr = Encapsulate(p.o, p.i) }), "pair %d", k)
		require.Zero(t, testing.AllocsPerRun(100, func() {
			var d decap
			d, sinkErr = decapsulate(p.o, p.i)
			sinkU32 = uint32(d)
		}), "pair %d", k)
	}
}

// FuzzTunnel drives Encapsulate and Decapsulate with arbitrary outer and
// inner bytes (inner inside outer's buffer or apart, checksums fixed or
// not) against the RFC's table: no panic, no allocation, bad input left
// alone with check's error, and on valid headers the table's codepoint and
// class with nothing else changed but a correctly updated IPv4 checksum.
func FuzzTunnel(f *testing.F) {
	for _, fam := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		for _, oe := range allECN {
			for _, ie := range allECN {
				o, i := tunnelPacket(fam[0], fam[1], false, oe == aqm.ECT1, oe, ie, 0, 12)
				f.Add(o, i, false, false)
				f.Add(o, i, true, true)
			}
		}
	}
	f.Add([]byte{0x45}, []byte{}, false, true)
	f.Fuzz(func(t *testing.T, outer, inner []byte, nested, fix bool) {
		if nested && len(outer) > 0 {
			if hl := tunnelHdrLen(outer); hl <= len(outer) {
				inner = outer[hl:]
			}
		}
		if fix {
			for _, p := range [][]byte{outer, inner} {
				if len(p) >= 20 && p[0]>>4 == 4 {
					if hl := tunnelHdrLen(p); hl >= 20 && hl <= len(p) {
						fixChecksum(p[:hl])
					}
				}
			}
		}
		_, _, _, oerr := check(outer)
		_, _, _, ierr := check(inner)
		wantErr := oerr
		if wantErr == nil {
			wantErr = ierr
		}
		for _, isDecap := range []bool{true, false} {
			// Work on a copy of the buffer(s), keeping inner inside
			// outer when it was.
			o := bytes.Clone(outer)
			i := bytes.Clone(inner)
			if nested && len(outer) > 0 && len(inner) < len(outer) && tunnelHdrLen(outer)+len(inner) == len(outer) {
				i = o[len(o)-len(inner):]
			}
			ob, ib := bytes.Clone(o), bytes.Clone(i)
			var d decap
			var err error
			if isDecap {
				d, err = decapsulate(o, i)
			} else {
				err = Encapsulate(o, i)
			}
			if wantErr != nil {
				require.ErrorIs(t, err, wantErr)
				require.Equal(t, ob, o)
				require.Equal(t, ib, i)
				continue
			}
			oe, ie := refECNOf(ob), refECNOf(ib)
			if isDecap {
				want, drop, mark := tunnelModel(oe, ie)
				require.Equal(t, tunnelClass(drop, mark), d)
				if drop {
					require.ErrorIs(t, err, ErrDecapDrop)
					require.Equal(t, ib, i)
				} else {
					require.NoError(t, err)
					requireECNWritten(t, ib, i, want)
				}
				hl := tunnelHdrLen(ob)
				require.Equal(t, ob[:hl], o[:hl])
			} else {
				require.NoError(t, err)
				hl := tunnelHdrLen(ob)
				if hl <= len(ob) {
					requireECNWritten(t, ob[:hl], o[:hl], ie)
				}
				require.Equal(t, ib, i)
			}
		}
		require.Zero(t, testing.AllocsPerRun(1, func() { sinkErr = Encapsulate(outer, inner) }))
		require.Zero(t, testing.AllocsPerRun(1, func() { _, sinkErr = Decapsulate(outer, inner) }))
	})
}
