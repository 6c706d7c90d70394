package cake

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Errors of [Classifier.Classify].
var (
	// ErrNotIP means the bytes are not an IPv4 or IPv6 packet.
	ErrNotIP = errors.New("cake: not an IPv4 or IPv6 packet")
	// ErrTruncated means the IP header is cut short.
	ErrTruncated = errors.New("cake: truncated IP header")
)

// Classifier turns raw IP packets into the [aqm.Meta] and [Info] a CAKE
// queue needs: a keyed 5-tuple flow hash that is the same for both
// directions of a connection, keyed source and destination host hashes,
// the DSCP and ECN bits, and the TCP ACK summary for the ACK filter. It
// holds only its key and allocates nothing per packet.
type Classifier struct {
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
	return &Classifier{k0: s.Uint64(), k1: s.Uint64() | 1, wash: wash}
}

// hashWords mixes words into a keyed 32-bit hash (multiply-xorshift per
// word, SplitMix64's finaliser at the end).
func (c *Classifier) hashWords(ws ...uint64) uint32 {
	h := c.k0
	for _, w := range ws {
		h ^= w
		hi, lo := bits.Mul64(h, c.k1)
		h = hi ^ lo
	}
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return uint32(h ^ h>>31)
}

// addr is an IP address as two words (IPv4 in the low word of b).
type addr struct{ a, b uint64 }

func addrOf(p []byte) addr {
	if len(p) == 4 {
		return addr{0, uint64(binary.BigEndian.Uint32(p))}
	}
	return addr{binary.BigEndian.Uint64(p[:8]), binary.BigEndian.Uint64(p[8:16])}
}

func (x addr) less(y addr) bool { return x.a < y.a || x.a == y.a && x.b < y.b }

// Classify parses pkt, an IPv4 or IPv6 packet starting at the IP header,
// and returns its Meta (Size the IP length, Hash the flow hash, ECN) and
// its Info (host hashes, DSCP, TCP ACK summary). Ports are used for TCP,
// UDP, UDP-Lite, SCTP and DCCP of first fragments; IPv6 extension headers
// are skipped; IPv6 carried in IPv4 (protocol 41) is classified by the
// inner header except for the DSCP. Bad input returns an error, never
// panics.
func (c *Classifier) Classify(pkt []byte) (aqm.Meta, Info, error) {
	var m aqm.Meta
	var info Info
	if len(pkt) < 1 {
		return m, info, ErrTruncated
	}
	m.Size = uint32(min(len(pkt), 1<<31))
	outer := pkt
	ver := pkt[0] >> 4
	var tos uint8
	switch ver {
	case 4:
		if len(pkt) < 20 {
			return m, info, ErrTruncated
		}
		tos = pkt[1]
	case 6:
		if len(pkt) < 40 {
			return m, info, ErrTruncated
		}
		tos = pkt[0]<<4 | pkt[1]>>4
	default:
		return m, info, ErrNotIP
	}
	info.DSCP = tos >> 2
	m.ECN = aqm.ECN(tos) & aqm.ECNMask
	src, dst, proto, l4, first, err := parseIP(pkt)
	if err != nil {
		return m, info, err
	}
	if proto == 41 && ver == 4 && len(l4) >= 40 && l4[0]>>4 == 6 { // IPv6 in IPv4
		pkt = l4
		src, dst, proto, l4, first, err = parseIP(pkt)
		if err != nil {
			return m, info, err
		}
	}
	var sp, dp uint16
	if first && len(l4) >= 4 && hasPorts(proto) {
		sp, dp = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	}
	sa, da := addrOf(src), addrOf(dst)
	v := uint64(pkt[0] >> 4)
	info.SrcHost = c.hashWords(v, sa.a, sa.b)
	info.DstHost = c.hashWords(v, da.a, da.b)
	// Both directions hash alike: order the endpoints.
	lo, hi, lp, hp := sa, da, sp, dp
	if hi.less(lo) || hi == lo && hp < lp {
		lo, hi, lp, hp = hi, lo, hp, lp
	}
	m.Hash = c.hashWords(v<<8|uint64(proto), lo.a, lo.b, hi.a, hi.b, uint64(lp)<<16|uint64(hp))
	if proto == 6 && first {
		info.ACK = c.tcpSummary(l4, v, sa, da)
	}
	if c.wash && info.DSCP != 0 {
		wash(outer)
	}
	return m, info, nil
}

func hasPorts(proto uint8) bool {
	switch proto {
	case 6, 17, 33, 132, 136: // TCP, UDP, DCCP, SCTP, UDP-Lite
		return true
	}
	return false
}

// parseIP returns the addresses, the upper-layer protocol and its bytes,
// and whether this is the first (or only) fragment.
func parseIP(p []byte) (src, dst []byte, proto uint8, l4 []byte, first bool, err error) {
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return nil, nil, 0, nil, false, ErrTruncated
		}
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || ihl > len(p) {
			return nil, nil, 0, nil, false, ErrTruncated
		}
		end := len(p)
		if tl := int(binary.BigEndian.Uint16(p[2:])); tl >= ihl && tl < end {
			end = tl
		}
		first = binary.BigEndian.Uint16(p[6:])&0x1fff == 0
		return p[12:16], p[16:20], p[9], p[ihl:end], first, nil
	case 6:
		if len(p) < 40 {
			return nil, nil, 0, nil, false, ErrTruncated
		}
		end := len(p)
		if pl := int(binary.BigEndian.Uint16(p[4:])); 40+pl < end {
			end = 40 + pl
		}
		proto = p[6]
		rest := p[40:end]
		first = true
		for range 8 { // extension headers, a bounded number
			switch proto {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if len(rest) < 8 {
					return p[8:24], p[24:40], proto, nil, false, nil
				}
				n := (int(rest[1]) + 1) * 8
				if n > len(rest) {
					return p[8:24], p[24:40], proto, nil, false, nil
				}
				proto, rest = rest[0], rest[n:]
				continue
			case 44: // fragment
				if len(rest) < 8 {
					return p[8:24], p[24:40], proto, nil, false, nil
				}
				first = binary.BigEndian.Uint16(rest[2:])&0xfff8 == 0
				proto, rest = rest[0], rest[8:]
				continue
			}
			break
		}
		return p[8:24], p[24:40], proto, rest, first, nil
	}
	return nil, nil, 0, nil, false, ErrNotIP
}

// tcpSummary fills an ACKInfo from a TCP header and its payload.
func (c *Classifier) tcpSummary(t []byte, v uint64, sa, da addr) ACKInfo {
	var a ACKInfo
	if len(t) < 20 {
		return a
	}
	off := int(t[12]>>4) * 4
	if off < 20 || off > len(t) {
		return a
	}
	a.TCP = true
	a.Conn = c.hashWords(v, sa.a, sa.b, da.a, da.b, uint64(binary.BigEndian.Uint32(t[0:4])))
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
				a.SACK[i] = SACKBlock{binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])}
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
