package router

// This file writes a direction's batch with fewer system calls: with
// VnetHdr, the TCP segments of each flow that leave in the same batch, one
// after the other in their flow (other flows' packets may lie between
// them), are joined into one GSO super-packet, written once, which the
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

// maxOpen is how many flows' runs a batch keeps open at once; a segment
// of a further flow closes the oldest.
const maxOpen = 16

// sameFlow reports whether two segments have the same addresses and ports.
func sameFlow(a, b *tcpSeg) bool {
	if a.v6 != b.v6 {
		return false
	}
	if a.v6 {
		return string(a.ip[8:40]) == string(b.ip[8:40]) && string(a.ip[40:44]) == string(b.ip[40:44])
	}
	return string(a.ip[12:20]) == string(b.ip[12:20]) && string(a.ip[a.l4:a.l4+4]) == string(b.ip[b.l4:b.l4+4])
}

// tcpFlow reads the addresses and ports of any TCP packet behind off
// bytes, segment or not, into s.ip, s.v6 and s.l4; tcp is false for a
// packet that is not TCP and keyed false for a TCP packet whose ports it
// cannot find.
func tcpFlow(p []byte, off int) (s tcpSeg, tcp, keyed bool) {
	if len(p) < off+20 {
		return s, false, false
	}
	ip := p[off:]
	switch ip[0] >> 4 {
	case 4:
		s.l4 = int(ip[0]&15) * 4
		if ip[9] != 6 {
			return s, false, false
		}
	case 6:
		if len(ip) < 40 {
			return s, false, false
		}
		if ip[6] != 6 {
			return s, true, false // an extension header may lead to TCP
		}
		s.v6, s.l4 = true, 40
	default:
		return s, false, false
	}
	s.ip = ip
	return s, true, s.l4 >= 20 && len(ip) >= s.l4+4
}

// plan groups the batch ps into runs: for each flow, segments that follow
// one another (follows) within room bytes, consecutive within the flow
// though other flows' packets may lie between them. Any other TCP packet
// of a flow (a pure ACK, a FIN, a segment that does not follow) closes the
// flow's run, so that nothing overtakes a packet of its own flow; a TCP
// packet whose ports cannot be read closes every run. On return head[i]
// is true for the first packet of each run (and for every packet written
// on its own), count[i] its run's length, and next[i] the index of the
// run's next packet (or -1).
func (c *coalescer) plan(ps [][]byte, off, room int) {
	n := len(ps)
	c.segs = grow(c.segs, n)
	c.next = grow(c.next, n)
	c.last = grow(c.last, n)
	c.count = grow(c.count, n)
	c.size = grow(c.size, n)
	c.head = grow(c.head, n)
	nopen := 0
	closeAt := func(k int) {
		copy(c.open[k:nopen], c.open[k+1:nopen])
		nopen--
	}
	for i, p := range ps {
		c.next[i], c.count[i], c.head[i] = -1, 1, true
		s, ok := parseSeg(p, off)
		if !ok {
			f, tcp, keyed := tcpFlow(p, off)
			switch {
			case !tcp:
			case !keyed:
				nopen = 0
			default:
				for k := 0; k < nopen; k++ {
					if sameFlow(&c.segs[c.open[k]], &f) {
						closeAt(k)
						break
					}
				}
			}
			continue
		}
		c.segs[i] = s
		k := 0
		for ; k < nopen && !sameFlow(&c.segs[c.open[k]], &s); k++ {
		}
		if k < nopen {
			h := c.open[k]
			last := c.last[h]
			if follows(&c.segs[h], &c.segs[last], &s, int(c.count[h])) && c.size[h]+s.payload() <= room {
				c.next[last], c.last[h] = int32(i), int32(i)
				c.count[h]++
				c.size[h] += s.payload()
				c.head[i] = false
				continue
			}
			closeAt(k)
		}
		if nopen == maxOpen {
			closeAt(0)
		}
		c.open[nopen] = int32(i)
		nopen++
		c.last[i] = int32(i)
		c.size[i] = off + len(s.ip)
	}
}

// grow returns s with length n, reusing its array when it can.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, max(n, 2*cap(s)))
	}
	return s[:n]
}

// members gathers into c.run the buffers of the run that starts at i.
func (c *coalescer) members(ps [][]byte, i int) [][]byte {
	c.run = c.run[:0]
	for j := int32(i); j >= 0; j = c.next[j] {
		c.run = append(c.run, ps[j])
	}
	return c.run
}

// join writes the run ps (which plan made, at least two segments)
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

// coalescer is one write's scratch, kept between writes in a sync.Pool:
// the plan (per packet of the batch: its parse, its run's links, sizes and
// heads, the runs still open), what is handed to the device, and for each
// entry the head of the run it stands for.
type coalescer struct {
	segs  []tcpSeg
	next  []int32
	last  []int32
	count []int32
	size  []int
	head  []bool
	open  [maxOpen]int32
	run   [][]byte
	out   [][]byte
	spans []span
}

// span is the run of a batch that starts at head; joined says it was
// copied into one super-packet (a read-pool buffer).
type span struct {
	head   int
	joined bool
}

var coalescers = sync.Pool{New: func() any { return new(coalescer) }}

// coalesces reports whether the router joins segments on write: with
// VnetHdr, unless Config.DisableCoalesce.
func (r *Router) coalesces() bool { return r.off > 0 && !r.cfg.DisableCoalesce }

// writeCoalesced writes ps as write does, each run plan finds joined into
// a super-packet in a read-pool buffer (a run is written as its packets,
// one after the other, when no buffer is free). It counts, returns and
// drops the packets of the batch, never the super-packets. A super-packet
// the device refuses is written again as its segments, one by one, so that
// a kernel that refuses the joined form costs system calls and never
// packets.
func (d *Queue) writeCoalesced(ps [][]byte) {
	r := d.r
	c := coalescers.Get().(*coalescer)
	c.plan(ps, r.off, r.pool.size)
	out, spans := c.out[:0], c.spans[:0]
	for i := range ps {
		if !c.head[i] {
			continue
		}
		if c.count[i] > 1 {
			if b, ok := r.pool.get(); ok {
				out = append(out, b[:join(b, c.members(ps, i), r.off)])
				spans = append(spans, span{i, true})
				continue
			}
		}
		for j := int32(i); j >= 0; j = c.next[j] {
			out = append(out, ps[j])
			spans = append(spans, span{int(j), false})
		}
	}
	for k := 0; k < len(out); {
		n, err := d.dev.WriteBatch(out[k:])
		for _, s := range spans[k : k+n] {
			if !s.joined {
				d.wrote(ps[s.head])
			} else {
				for j := int32(s.head); j >= 0; j = c.next[j] {
					d.wrote(ps[j])
				}
				d.c.coalesced.Add(uint64(c.count[s.head]))
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
			for j := int32(s.head); j >= 0; j = c.next[j] {
				d.write(ps[j : j+1])
			}
		} else {
			d.c.drop(dropWriteError)
			r.put(ps[s.head])
			if r.cfg.Logf != nil && !d.loggedErr.Swap(true) {
				r.cfg.Logf("router: %v: write: %v (further write errors are counted, not logged)", d.prefix, err)
			}
		}
		k++
	}
	clear(out)
	clear(c.run)
	clear(c.segs)
	c.out, c.spans = out[:0], spans[:0]
	coalescers.Put(c)
}

// wrote counts p, written, and returns its buffer.
func (d *Queue) wrote(p []byte) {
	d.c.writtenPackets.Add(1)
	d.c.writtenBytes.Add(uint64(d.r.wireBytes(p)))
	d.r.put(p)
}
