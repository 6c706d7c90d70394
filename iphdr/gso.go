package iphdr

import (
	"encoding/binary"
	"errors"
)

// ErrGSO reports a super-packet that does not match its virtio-net header:
// a GSO kind for another IP version or transport, an IPv4 fragment, an
// IPv6 packet with extension headers or a Jumbo payload, a TCP data offset
// below 5, a checksum start that is not the transport header, or kind
// GSOUDP (UFO), which is cut into IP fragments and not supported.
var ErrGSO = errors.New("iphdr: packet does not match its GSO header")

// ErrGSOBuffers is returned by [SplitGSO] when the caller gave fewer
// buffers than the packet has segments, or a buffer too short for its
// segment. Nothing is written then.
var ErrGSOBuffers = errors.New("iphdr: too few or too short buffers for the segments")

// gsoLayout is where a super-packet's parts lie.
type gsoLayout struct {
	v6  bool
	tcp bool
	l4  int // transport header offset
	hdr int // end of the headers: where the payload starts
	end int // end of the IP packet
	mss int // payload bytes per segment
}

func (l gsoLayout) count() int {
	n := (l.end - l.hdr + l.mss - 1) / l.mss
	return max(n, 1)
}

// layout checks the super-packet pkt against h (a GSO kind) and finds its
// parts.
func layout(pkt []byte, h VnetHdr) (gsoLayout, error) {
	var l gsoLayout
	if err := h.Check(); err != nil {
		return l, err
	}
	v6, hlen, end, err := check(pkt)
	if err != nil {
		return l, err
	}
	var proto byte
	if v6 {
		if be16(pkt[4:6]) == 0 {
			return l, ErrGSO // Jumbo payload: a length field cannot hold it
		}
		proto, l.l4 = pkt[6], 40
	} else {
		if be16(pkt[6:8])&0x3fff != 0 {
			return l, ErrGSO // a fragment
		}
		proto, l.l4 = pkt[9], hlen
	}
	switch h.Kind() {
	case GSOTCPv4:
		l.tcp = true
		if v6 || proto != protoTCP {
			return l, ErrGSO
		}
	case GSOTCPv6:
		l.tcp = true
		if !v6 || proto != protoTCP {
			return l, ErrGSO
		}
	case GSOUDPL4:
		if proto != protoUDP {
			return l, ErrGSO
		}
	default:
		return l, ErrGSO
	}
	if h.Flags&VnetNeedsCsum != 0 && int(h.CsumStart) != l.l4 {
		return l, ErrGSO
	}
	l.v6, l.end, l.mss = v6, end, int(h.GSOSize)
	if l.tcp {
		if end < l.l4+20 {
			return l, ErrTruncated
		}
		doff := int(pkt[l.l4+12]>>4) * 4
		if doff < 20 {
			return l, ErrGSO
		}
		l.hdr = l.l4 + doff
	} else {
		l.hdr = l.l4 + 8
	}
	if l.hdr > end {
		return l, ErrTruncated
	}
	return l, nil
}

// GSOSegments returns how many packets the packet pkt with virtio-net
// header h stands for: 1 for a single packet (GSONone), and for a
// super-packet its payload length divided by GSOSize, rounded up (at least
// 1). A queue counts them in [aqm.Meta.Segments]. It returns 1 with
// [ErrVnetHdr], [ErrGSO], [ErrTruncated] or [ErrNotIP] if the header or the
// packet is bad, and never allocates.
func GSOSegments(pkt []byte, h VnetHdr) (int, error) {
	if !h.IsGSO() {
		return 1, h.Check()
	}
	l, err := layout(pkt, h)
	if err != nil {
		return 1, err
	}
	return l.count(), nil
}

// GSOWireSize returns how many IP bytes the packet pkt with virtio-net
// header h puts on the wire: for a single packet (GSONone) len(pkt), and
// for a super-packet the sum of the sizes of the segments [SplitGSO] cuts
// it into, each with its own IP and transport headers, that is the
// packet's length plus (segments − 1) × its header length. No link-layer
// header or framing is counted. A caller that queues a super-packet whole
// can put these bytes in [aqm.Meta.Size], so that a shaper and byte limits
// see what the link will carry. It returns len(pkt) with the errors of [GSOSegments],
// and never allocates.
func GSOWireSize(pkt []byte, h VnetHdr) (int, error) {
	if !h.IsGSO() {
		return len(pkt), h.Check()
	}
	l, err := layout(pkt, h)
	if err != nil {
		return len(pkt), err
	}
	return l.end + (l.count()-1)*l.hdr, nil
}

// SplitGSO cuts the super-packet pkt, described by its virtio-net header
// h, into the packets it stands for, as a segmentation offload would put
// them on the wire: segment i goes into bufs[i][:sizes[i]], and SplitGSO
// returns how many segments it wrote. Each segment carries the super
// packet's IP and transport headers, with
//
//   - IPv4: the total length of the segment, the identification plus i
//     (modulo 2^16), and a recomputed header checksum;
//   - IPv6: the payload length of the segment;
//   - TCP: the sequence number plus i×GSOSize, FIN and PSH kept only on
//     the last segment and CWR only on the first;
//   - UDP: the length of the datagram;
//   - a complete transport checksum (the super-packet's checksum field,
//     a partial sum when VnetNeedsCsum is set, is ignored and recomputed),
//     so the segments need no offload: write them with a GSONone header and
//     no flags.
//
// The ECN field is copied, so a super-packet marked CE gives CE segments
// (with their IPv4 checksums right). Each bufs[i] must hold the headers
// plus GSOSize bytes (the last one, the headers plus the tail); with fewer
// or shorter buffers SplitGSO writes nothing and returns [ErrGSOBuffers].
// A packet with kind GSONone is copied into bufs[0] unchanged. Errors are
// those of [GSOSegments]; SplitGSO never allocates and never writes past
// the buffers.
func SplitGSO(pkt []byte, h VnetHdr, bufs [][]byte, sizes []int) (int, error) {
	if !h.IsGSO() {
		if err := h.Check(); err != nil {
			return 0, err
		}
		if len(bufs) < 1 || len(sizes) < 1 || len(bufs[0]) < len(pkt) {
			return 0, ErrGSOBuffers
		}
		sizes[0] = copy(bufs[0], pkt)
		return 1, nil
	}
	l, err := layout(pkt, h)
	if err != nil {
		return 0, err
	}
	n := l.count()
	if n > len(bufs) || n > len(sizes) {
		return 0, ErrGSOBuffers
	}
	for i := range n {
		if len(bufs[i]) < l.hdr+l.chunk(i, n) {
			return 0, ErrGSOBuffers
		}
	}
	var id, seq uint32
	if !l.v6 {
		id = uint32(be16(pkt[4:6]))
	}
	if l.tcp {
		seq = binary.BigEndian.Uint32(pkt[l.l4+4 : l.l4+8])
	}
	for i := range n {
		c := l.chunk(i, n)
		b := bufs[i][:l.hdr+c]
		copy(b, pkt[:l.hdr])
		off := l.hdr + i*l.mss
		copy(b[l.hdr:], pkt[off:off+c])
		l.fix(b, i, n, id, seq)
		sizes[i] = len(b)
	}
	return n, nil
}

// chunk is the payload length of segment i of n.
func (l gsoLayout) chunk(i, n int) int {
	if i < n-1 {
		return l.mss
	}
	return l.end - l.hdr - (n-1)*l.mss
}

// fix rewrites the headers of segment i of n in b (headers and payload in
// place): lengths, IPv4 identification and checksum, TCP sequence and
// flags, and the transport checksum.
func (l gsoLayout) fix(b []byte, i, n int, id, seq uint32) {
	l4len := len(b) - l.l4
	if l.v6 {
		binary.BigEndian.PutUint16(b[4:6], uint16(len(b)-40))
	} else {
		binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:6], uint16(id+uint32(i)))
		b[10], b[11] = 0, 0
		binary.BigEndian.PutUint16(b[10:12], ^fold(sum(b[:l.l4], 0)))
	}
	t := b[l.l4:]
	var ck int
	if l.tcp {
		binary.BigEndian.PutUint32(t[4:8], seq+uint32(i*l.mss))
		const fin, psh, cwr = 0x01, 0x08, 0x80
		if i < n-1 {
			t[13] &^= fin | psh
		}
		if i > 0 {
			t[13] &^= cwr
		}
		ck = 16
	} else {
		binary.BigEndian.PutUint16(t[4:6], uint16(l4len))
		ck = 6
	}
	t[ck], t[ck+1] = 0, 0
	var acc uint64
	if l.v6 {
		acc = sum(b[8:40], uint64(l4len)+uint64(b[6]))
	} else {
		acc = sum(b[12:20], uint64(l4len)+uint64(b[9]))
	}
	c := ^fold(sum(t, acc))
	if c == 0 && !l.tcp {
		c = 0xffff // UDP sends a computed zero as all ones (RFC 768)
	}
	binary.BigEndian.PutUint16(t[ck:ck+2], c)
}

// sum adds b, as big-endian 16-bit words (an odd last byte padded with a
// zero), to acc, unfolded. Adding 32-bit words is the same sum modulo
// 0xffff, since 2^16 ≡ 1; acc stays far below 2^64 for any IP packet.
func sum(b []byte, acc uint64) uint64 {
	for len(b) >= 8 {
		acc += uint64(binary.BigEndian.Uint32(b[0:4])) + uint64(binary.BigEndian.Uint32(b[4:8]))
		b = b[8:]
	}
	if len(b) >= 4 {
		acc += uint64(binary.BigEndian.Uint32(b[0:4]))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc += uint64(be16(b[0:2]))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// fold reduces a sum to 16 bits with end-around carries.
func fold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}
