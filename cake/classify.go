package cake

import (
	"encoding/binary"
	"math/bits"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/iphdr"
)

// Classifier turns raw IP packets into the [aqm.Meta] and [Info] a CAKE
// queue needs: a keyed 5-tuple flow hash that is the same for both
// directions of a connection, keyed source and destination host hashes,
// the DSCP and ECN bits, and the TCP ACK summary for the ACK filter. The
// IP header is read by [iphdr.Hasher] in its [iphdr.HashFlowSymmetric]
// mode (one parse gives all three hashes); the Classifier adds the TCP
// header. It holds only its keys and allocates nothing per packet.
type Classifier struct {
	h      iphdr.Hasher
	k0, k1 uint64
	wash   bool
}

// NewClassifier returns a classifier keyed by seed; zero (the default,
// for production) draws a secret key from crypto/rand, a fixed seed gives
// reproducible hashes. With wash set, Classify clears the DSCP of every
// packet it reads (after reading it), fixing the IPv4 header checksum, as
// tc-cake's wash keyword.
func NewClassifier(seed uint64, wash bool) *Classifier {
	s := rng.New(rng.SeedOrRandom(seed))
	h := iphdr.NewHasherWithKey(s.Uint64(), s.Uint64()).WithMode(iphdr.HashFlowSymmetric)
	return &Classifier{h: h, k0: s.Uint64(), k1: s.Uint64() | 1, wash: wash}
}

// connHash mixes a direction's identity into a keyed 32-bit hash
// (multiply-xorshift, SplitMix64's finaliser at the end).
func (c *Classifier) connHash(a, b uint64) uint32 {
	h := c.k0 ^ a
	hi, lo := bits.Mul64(h, c.k1)
	h = (hi ^ lo) ^ b
	hi, lo = bits.Mul64(h, c.k1)
	h = hi ^ lo
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return uint32(h ^ h>>31)
}

// ipEnd is where the IP packet that iphdr accepted ends: its total length
// (IPv4) or 40 plus its payload length (IPv6; the whole slice for a jumbo
// payload).
func ipEnd(pkt []byte, version uint8) int {
	if version == 4 {
		return int(binary.BigEndian.Uint16(pkt[2:4]))
	}
	if n := int(binary.BigEndian.Uint16(pkt[4:6])); n != 0 {
		return 40 + n
	}
	return len(pkt)
}

// Classify parses pkt, an IPv4 or IPv6 packet starting at the IP header,
// and returns its Meta (Size the IP length, Hash the flow hash, ECN) and
// its Info (host hashes, DSCP, TCP ACK summary). The flow key is that of
// [iphdr.Hasher] with the endpoints in order: ports for TCP, UDP,
// UDP-Lite, SCTP and DCCP, ICMP echo identifiers, GRE keys and ESP SPIs;
// fragments are keyed on addresses and protocol; IPv6 extension headers
// (and AH) are skipped. IPv6 carried in IPv4 (protocol 41) is classified
// by the inner header except for the DSCP and ECN. Only unfragmented TCP
// gets an ACK summary. Bad input returns an error of package iphdr ([iphdr.ErrNotIP],
// [iphdr.ErrTruncated]), never a panic.
func (c *Classifier) Classify(pkt []byte) (aqm.Meta, Info, error) {
	var m aqm.Meta
	var info Info
	m.Size = uint32(min(uint64(len(pkt)), 1<<31))
	f, err := c.h.Flow(pkt)
	if err != nil {
		return m, info, err
	}
	info.DSCP = f.DSCP
	m.ECN = f.ECN
	outer := pkt
	if f.Protocol == 41 && f.Version == 4 && f.L4Offset != 0 { // IPv6 in IPv4
		inner := pkt[f.L4Offset:ipEnd(pkt, 4)]
		if g, err := c.h.Flow(inner); err == nil && g.Version == 6 {
			f, pkt = g, inner
		}
	}
	m.Hash = f.Hash
	info.SrcHost, info.DstHost = f.SrcHostHash, f.DstHostHash
	if f.Protocol == 6 && f.L4Offset != 0 {
		info.ack = c.tcpSummary(pkt[f.L4Offset:ipEnd(pkt, f.Version)], f)
	}
	if c.wash && info.DSCP != 0 {
		wash(outer)
	}
	return m, info, nil
}

// tcpSummary fills an ackInfo from a TCP header and its payload.
func (c *Classifier) tcpSummary(t []byte, f iphdr.Flow) ackInfo {
	var a ackInfo
	if len(t) < 20 {
		return a
	}
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return a
	}
	a.TCP = true
	// The connection in this direction: the flow (the same both ways),
	// the source host and the source port tell the directions apart.
	a.Conn = c.connHash(uint64(f.Hash)<<32|uint64(f.SrcHostHash), uint64(binary.BigEndian.Uint16(t[0:2])))
	a.Ack = binary.BigEndian.Uint32(t[8:])
	a.Flags = t[13]
	a.Reserved = t[12]&0x0f != 0
	a.Payload = len(t) > off
	opts := t[20:off]
	for len(opts) > 0 {
		kind := opts[0]
		if kind == 0 { // end of list
			break
		}
		if kind == 1 { // NOP
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || int(opts[1]) < 2 || int(opts[1]) > len(opts) {
			a.OtherOptions = true
			break
		}
		n := int(opts[1])
		switch {
		case kind == 19 && n == 18: // MD5 signature
		case kind == 5 && n%8 == 2 && n <= 34: // SACK, 1 to 4 blocks
			k := (n - 2) / 8
			for i := range k {
				b := opts[2+8*i:]
				a.SACK[i] = sackBlock{binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])}
			}
			a.NSACK = uint8(k)
		case kind == 8 && n == 10: // timestamps
			a.HasTS = true
			a.TSVal, a.TSEcr = binary.BigEndian.Uint32(opts[2:]), binary.BigEndian.Uint32(opts[6:])
		default:
			a.OtherOptions = true
		}
		opts = opts[n:]
	}
	return a
}

// wash clears the DSCP of the IP header at p (keeping ECN), fixing the
// IPv4 header checksum incrementally (RFC 1624).
func wash(p []byte) {
	switch p[0] >> 4 {
	case 4:
		old := binary.BigEndian.Uint16(p[0:2])
		p[1] &= 0x03
		nw := binary.BigEndian.Uint16(p[0:2])
		sum := uint32(^binary.BigEndian.Uint16(p[10:12])) + uint32(^old) + uint32(nw)
		sum = sum&0xffff + sum>>16
		sum = sum&0xffff + sum>>16
		binary.BigEndian.PutUint16(p[10:12], ^uint16(sum))
	case 6:
		p[0] &= 0xf0
		p[1] &= 0x3f
	}
}
