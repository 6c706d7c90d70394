package router

// This file writes a direction's batch with fewer system calls: with
// VnetHdr, consecutive TCP segments of one flow that leave in the same
// batch are joined into one GSO super-packet, written once, which the
// kernel cuts back into the same segments (as a NIC's GRO hands the stack
// one large packet). Queue.write calls writeCoalesced; the rest of the
// router never sees a joined packet, and every counter counts the
// segments the queue released.

import (
	"encoding/binary"
	"sync"

	"github.com/aqmkit/aqmkit/iphdr"
)

// TCP flag bits.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpURG = 0x20
	tcpECE = 0x40
	tcpCWR = 0x80
)

// maxCoalesced is the most IP bytes a joined super-packet holds: an IPv4
// total length, or an IPv6 payload length plus its fixed header.
const maxCoalesced = 0xffff

// tcpSeg is a TCP segment a batch may join: where its parts lie in the IP
// packet ip.
type tcpSeg struct {
	ip    []byte
	v6    bool
	l4    int // TCP header offset
	hdr   int // payload offset: the end of the TCP header
	seq   uint32
	flags byte
}

func (s *tcpSeg) payload() int { return len(s.ip) - s.hdr }

// parseSeg reports whether the buffer p (a virtio-net header of off bytes,
// then an IP packet) is a segment that can be joined: a single packet
// (GSONone) whose checksum, if partial, is TCP's; IPv4 without fragment
// bits or IPv6 without extension headers, of exactly its stated length;
// TCP with data and no flag but ACK, PSH and ECE (SYN, FIN, RST, URG and
// CWR segments are written as they are).
func parseSeg(p []byte, off int) (tcpSeg, bool) {
	var s tcpSeg
	if len(p) < off+40 {
		return s, false
	}
	h, err := iphdr.ParseVnetHdr(p)
	if err != nil || h.IsGSO() {
		return s, false
	}
	ip := p[off:]
	switch ip[0] >> 4 {
	case 4:
		ihl := int(ip[0]&15) * 4
		if ihl < 20 || int(binary.BigEndian.Uint16(ip[2:4])) != len(ip) ||
			binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0 || ip[9] != 6 {
			return s, false
		}
		s.l4 = ihl
	case 6:
		if int(binary.BigEndian.Uint16(ip[4:6]))+40 != len(ip) || ip[6] != 6 {
			return s, false
		}
		s.v6, s.l4 = true, 40
	default:
		return s, false
	}
	if len(ip) < s.l4+20 {
		return s, false
	}
	t := ip[s.l4:]
	doff := int(t[12]>>4) * 4
	if doff < 20 || s.l4+doff >= len(ip) { // no payload, or a header past the end
		return s, false
	}
	if h.Flags&iphdr.VnetNeedsCsum != 0 && (int(h.CsumStart) != s.l4 || h.CsumOffset != 16) {
		return s, false
	}
	s.flags = t[13]
	if s.flags&^(tcpACK|tcpPSH|tcpECE) != 0 {
		return s, false
	}
	s.ip, s.hdr, s.seq = ip, s.l4+doff, binary.BigEndian.Uint32(t[4:8])
	return s, true
}

// follows reports whether next can join a run that starts with first, has
// n segments, and ends with last: the same IP header but for length,
// identification and checksum (so the same addresses, ECN field, DSCP, TTL
// and options), an IPv4 identification n past first's, the same TCP header
// but for the sequence number, checksum and PSH (so the same ports,
// acknowledgment, window and options, timestamps included), a sequence
// number that continues last's data, last not pushed and of first's size,
// next no longer than first, and the whole within maxCoalesced bytes.
func follows(first, last, next *tcpSeg, n int) bool {
	mss := first.payload()
	if last.flags&tcpPSH != 0 || last.payload() != mss || next.payload() > mss ||
		next.v6 != first.v6 || next.hdr != first.hdr || next.l4 != first.l4 ||
		next.flags|tcpPSH != first.flags|tcpPSH ||
		next.seq != last.seq+uint32(mss) ||
		len(first.ip)+(n-1)*mss+next.payload() > maxCoalesced {
		return false
	}
	a, b := first.ip, next.ip
	if first.v6 {
		if string(a[0:4]) != string(b[0:4]) || string(a[6:40]) != string(b[6:40]) {
			return false
		}
	} else {
		id := binary.BigEndian.Uint16(a[4:6]) + uint16(n)
		if binary.BigEndian.Uint16(b[4:6]) != id || string(a[0:2]) != string(b[0:2]) ||
			string(a[6:10]) != string(b[6:10]) || string(a[12:first.l4]) != string(b[12:first.l4]) {
			return false
		}
	}
	ta, tb := a[first.l4:first.hdr], b[first.l4:first.hdr]
	return string(ta[0:4]) == string(tb[0:4]) && string(ta[8:13]) == string(tb[8:13]) &&
		string(ta[14:16]) == string(tb[14:16]) && string(ta[18:]) == string(tb[18:])
}

// joinable returns how many of the buffers ps, from the first, form one
// run that can be written as a super-packet of at most room bytes
// (virtio-net header included); 1 when the first cannot be joined to the
// second.
func joinable(ps [][]byte, off, room int) int {
	if len(ps) < 2 {
		return len(ps)
	}
	first, ok := parseSeg(ps[0], off)
	if !ok {
		return 1
	}
	last, n := first, 1
	size := off + len(first.ip)
	for ; n < len(ps); n++ {
		next, ok := parseSeg(ps[n], off)
		if !ok || !follows(&first, &last, &next, n) || size+next.payload() > room {
			break
		}
		size += next.payload()
		last = next
	}
	return n
}

// join writes the run ps (which joinable accepted, at least two segments)
// into dst as one super-packet behind a virtio-net header and returns its
// length: the first segment's headers with the run's length, a new IPv4
// header checksum, the last segment's TCP flags, and in the TCP checksum
// field the pseudo-header's partial sum, for the kernel to complete
// (VnetNeedsCsum), as it does for any super-packet it cuts.
func join(dst []byte, ps [][]byte, off int) int {
	first, _ := parseSeg(ps[0], off)
	ip := dst[off:]
	n := copy(ip, first.ip)
	for _, p := range ps[1:] {
		s, _ := parseSeg(p, off)
		n += copy(ip[n:], s.ip[s.hdr:])
	}
	ip = ip[:n]
	last, _ := parseSeg(ps[len(ps)-1], off)
	t := ip[first.l4:]
	t[13] = last.flags
	tcpLen := n - first.l4
	var acc uint32
	if first.v6 {
		binary.BigEndian.PutUint16(ip[4:6], uint16(n-40))
		acc = sum16(ip[8:40]) + uint32(tcpLen) + 6
	} else {
		binary.BigEndian.PutUint16(ip[2:4], uint16(n))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:12], ^fold16(sum16(ip[:first.l4])))
		acc = sum16(ip[12:20]) + uint32(tcpLen) + 6
	}
	binary.BigEndian.PutUint16(t[16:18], fold16(acc))
	gso := uint8(iphdr.GSOTCPv4)
	if first.v6 {
		gso = iphdr.GSOTCPv6
	}
	iphdr.VnetHdr{
		Flags:      iphdr.VnetNeedsCsum,
		GSOType:    gso,
		HdrLen:     uint16(first.hdr),
		GSOSize:    uint16(first.payload()),
		CsumStart:  uint16(first.l4),
		CsumOffset: 16,
	}.Put(dst)
	return off + n
}

// sum16 adds b as big-endian 16-bit words; b has an even length of at most
// 60 bytes here, so the sum fits.
func sum16(b []byte) uint32 {
	var acc uint32
	for i := 0; i+1 < len(b); i += 2 {
		acc += uint32(b[i])<<8 | uint32(b[i+1])
	}
	return acc
}

// fold16 folds a one's-complement sum to 16 bits.
func fold16(acc uint32) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// coalescer is one write's scratch: what is handed to the device, and for
// each entry the span of the batch it stands for.
type coalescer struct {
	out   [][]byte
	spans []span
}

// span is the buffers ps[from:to] of a batch; joined says they were
// copied into one super-packet (a read-pool buffer).
type span struct {
	from, to int
	joined   bool
}

var coalescers = sync.Pool{New: func() any { return new(coalescer) }}

// coalesces reports whether the router joins segments on write: with
// VnetHdr, unless Config.DisableCoalesce.
func (r *Router) coalesces() bool { return r.off > 0 && !r.cfg.DisableCoalesce }

// writeCoalesced writes ps as write does, joining runs of segments into
// super-packets in read-pool buffers (a run is written as it is when no
// buffer is free). It counts, returns and drops the segments, never the
// super-packets. A super-packet the device refuses is written again as
// its segments, one by one, so that a kernel that refuses the joined form
// costs system calls and never packets.
func (d *Queue) writeCoalesced(ps [][]byte) {
	r := d.r
	c := coalescers.Get().(*coalescer)
	out, spans := c.out[:0], c.spans[:0]
	for i := 0; i < len(ps); {
		if n := joinable(ps[i:], r.off, r.pool.size); n > 1 {
			if b, ok := r.pool.get(); ok {
				out = append(out, b[:join(b, ps[i:i+n], r.off)])
				spans = append(spans, span{i, i + n, true})
				i += n
				continue
			}
		}
		out = append(out, ps[i])
		spans = append(spans, span{i, i + 1, false})
		i++
	}
	for k := 0; k < len(out); {
		n, err := d.dev.WriteBatch(out[k:])
		for _, s := range spans[k : k+n] {
			for _, p := range ps[s.from:s.to] {
				d.c.writtenPackets.Add(1)
				d.c.writtenBytes.Add(uint64(r.wireBytes(p)))
				r.put(p)
			}
			if s.joined {
				d.c.coalesced.Add(uint64(s.to - s.from))
				r.pool.put(out[k])
			}
			k++
		}
		if k >= len(out) {
			break
		}
		s := spans[k]
		if s.joined {
			r.pool.put(out[k])
			if r.cfg.Logf != nil && !d.loggedJoin.Swap(true) {
				r.cfg.Logf("router: %v: write of a joined super-packet: %v (its segments are written one by one; further refusals are not logged)", d.prefix, err)
			}
			for j := s.from; j < s.to; j++ {
				d.write(ps[j : j+1])
			}
		} else {
			d.c.drop(dropWriteError)
			r.put(ps[s.from])
			if r.cfg.Logf != nil && !d.loggedErr.Swap(true) {
				r.cfg.Logf("router: %v: write: %v (further write errors are counted, not logged)", d.prefix, err)
			}
		}
		k++
	}
	clear(out)
	c.out, c.spans = out[:0], spans[:0]
	coalescers.Put(c)
}
