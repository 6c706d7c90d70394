package iphdr

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomPacket builds a structurally plausible packet from r: IPv4 with
// random options and fragment fields, or IPv6 with a chain of 0–12
// extension headers of random kinds and sizes, then a transport header of
// a random protocol, random bytes, and sometimes a length field that lies
// or a cut at a random offset. Byte-level fuzzing rarely builds such
// chains; this reaches the walk's every branch.
func randomPacket(r *rand.Rand) []byte {
	protos := []byte{6, 17, 1, 58, 47, 50, 51, 132, 136, 33, 59, 99, 0, 43, 44, 60}
	l4 := make([]byte, r.IntN(40))
	for i := range l4 {
		l4[i] = byte(r.Uint32())
	}
	if len(l4) > 0 && r.IntN(2) == 0 {
		l4[0] = []byte{0, 8, 13, 14, 128, 129, 3}[r.IntN(7)] // ICMP types
	}
	if len(l4) > 1 && r.IntN(2) == 0 {
		l4[0] &= 0xa0 // GRE: C and K bits only
		l4[1] &= 1    // version 0 or 1
	}
	nh := protos[r.IntN(len(protos))]
	var p []byte
	if r.IntN(2) == 0 {
		opts := make([]byte, 4*r.IntN(11))
		frag := uint16(0)
		if r.IntN(4) == 0 {
			frag = uint16(r.Uint32())
		}
		if r.IntN(3) == 0 {
			nh = 51
			l4 = ah(protos[r.IntN(len(protos))], r.Uint32(), l4)
		}
		p = v4(byte(r.Uint32()), nh, srcA4, dstB4, frag, opts, l4)
	} else {
		body := l4
		for range r.IntN(13) {
			next := nh
			nh = []byte{0, 43, 60, 51, 44}[r.IntN(5)]
			switch nh {
			case 51:
				body = ah(next, r.Uint32(), body)
			case 44:
				body = frag6(next, uint16(r.IntN(4)), r.IntN(2) == 0, r.Uint32(), body)
			default:
				body = ext(next, 1+r.IntN(3), body)
			}
		}
		p = v6(byte(r.Uint32()), r.Uint32(), nh, srcA6, dstB6, body)
	}
	switch r.IntN(6) {
	case 0: // cut short
		p = p[:r.IntN(len(p)+1)]
	case 1: // the length field lies
		if p[0]>>4 == 4 {
			binary.BigEndian.PutUint16(p[2:], uint16(r.IntN(len(p)+8)))
		} else {
			binary.BigEndian.PutUint16(p[4:], uint16(r.IntN(len(p)-32)))
		}
	case 2: // link padding
		p = append(p, make([]byte, r.IntN(20))...)
	}
	return p
}

// On many random structured packets the fast path agrees with the
// reference in every result and never allocates.
func TestRandomPacketsMatchReference(t *testing.T) {
	seed := uint64(20260101)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	h := NewHasherWithKey(r.Uint64(), r.Uint64())
	walked := 0
	for i := range n {
		p := randomPacket(r)
		f := requireMatchesRef(t, h, p)
		if f.Version == 6 && f.L4Offset > 40 {
			walked++
		}
		if i%1000 == 0 {
			require.Zero(t, testing.AllocsPerRun(1, func() { sinkFlow, sinkErr = h.Flow(p) }))
		}
	}
	require.Greater(t, walked, n/20, "the generator reaches transport headers behind extension headers")
}
