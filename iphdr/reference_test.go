package iphdr

import (
	"bytes"
	"encoding/binary"
	"net/netip"
)

// This file is the slow reference: SipHash-c-d written generically from
// the paper, and a parser written from RFC 791, 8200, 4302, 2784/2890 and
// the package documentation, building each key as a byte string. It shares
// no code with the package beyond the sentinel errors and maxExtHeaders.

// refSipHash is SipHash-c-d of msg (any length) under key (k0, k1), as in
// Aumasson and Bernstein's paper: 64-bit words read little-endian, the last
// block padded with zeros and the length mod 256 in its top byte.
func refSipHash(c, d int, k0, k1 uint64, msg []byte) uint64 {
	v := [4]uint64{
		k0 ^ 0x736f6d6570736575,
		k1 ^ 0x646f72616e646f6d,
		k0 ^ 0x6c7967656e657261,
		k1 ^ 0x7465646279746573,
	}
	rotl := func(x uint64, b uint) uint64 { return x<<b | x>>(64-b) }
	sipRound := func() {
		v[0] += v[1]
		v[1] = rotl(v[1], 13)
		v[1] ^= v[0]
		v[0] = rotl(v[0], 32)
		v[2] += v[3]
		v[3] = rotl(v[3], 16)
		v[3] ^= v[2]
		v[0] += v[3]
		v[3] = rotl(v[3], 21)
		v[3] ^= v[0]
		v[2] += v[1]
		v[1] = rotl(v[1], 17)
		v[1] ^= v[2]
		v[2] = rotl(v[2], 32)
	}
	compress := func(m uint64) {
		v[3] ^= m
		for range c {
			sipRound()
		}
		v[0] ^= m
	}
	n := len(msg)
	for len(msg) >= 8 {
		compress(binary.LittleEndian.Uint64(msg))
		msg = msg[8:]
	}
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	compress(binary.LittleEndian.Uint64(last[:]))
	v[2] ^= 0xff
	for range d {
		sipRound()
	}
	return v[0] ^ v[1] ^ v[2] ^ v[3]
}

// refHash32 is the package's hash as documented: SipHash-1-3 folded to 32
// bits by xoring the halves.
func refHash32(k0, k1 uint64, msg []byte) uint32 {
	h := refSipHash(1, 3, k0, k1, msg)
	return uint32(h) ^ uint32(h>>32)
}

// refResult is what the reference parser derives from a packet.
type refResult struct {
	err      error
	version  int
	proto    byte
	l4off    int
	frag     bool
	ports    bool
	tc       byte // DS byte / traffic class
	flowKey  []byte
	srcKey   []byte
	dstKey   []byte
	symKey   []byte // the flow key with its endpoints in order (HashFlowSymmetric)
	invalKey []byte
}

// refParse parses pkt the slow way.
func refParse(pkt []byte) refResult {
	var r refResult
	r.invalKey = []byte{}
	if len(pkt) == 0 {
		r.err = ErrTruncated
		return r
	}
	r.version = int(pkt[0] >> 4)
	var src, dst netip.Addr
	var end, off int
	var nh byte
	switch r.version {
	case 4:
		if len(pkt) < 20 {
			r.err = ErrTruncated
			return r
		}
		ihl := int(pkt[0] & 0x0f)
		total := int(binary.BigEndian.Uint16(pkt[2:4]))
		switch {
		case ihl < 5, total < 4*ihl:
			r.err = ErrNotIP
			return r
		case total > len(pkt):
			r.err = ErrTruncated
			return r
		}
		r.tc = pkt[1]
		src = netip.AddrFrom4([4]byte(pkt[12:16]))
		dst = netip.AddrFrom4([4]byte(pkt[16:20]))
		end, off, nh = total, 4*ihl, pkt[9]
		flagsOffset := binary.BigEndian.Uint16(pkt[6:8])
		moreFragments := flagsOffset&(1<<13) != 0
		fragOffset := flagsOffset & (1<<13 - 1)
		r.frag = moreFragments || fragOffset != 0
	case 6:
		if len(pkt) < 40 {
			r.err = ErrTruncated
			return r
		}
		payload := int(binary.BigEndian.Uint16(pkt[4:6]))
		if payload == 0 {
			end = len(pkt)
		} else if 40+payload <= len(pkt) {
			end = 40 + payload
		} else {
			r.err = ErrTruncated
			return r
		}
		r.tc = byte(binary.BigEndian.Uint32(pkt[0:4]) >> 20)
		src = netip.AddrFrom16([16]byte(pkt[8:24]))
		dst = netip.AddrFrom16([16]byte(pkt[24:40]))
		off, nh = 40, pkt[6]
	default:
		r.err = ErrNotIP
		return r
	}

	var words, ahSPI []byte
	if !r.frag {
		reached, count := false, 0
	walk:
		for {
			extension := nh == 51 || r.version == 6 && (nh == 0 || nh == 43 || nh == 44 || nh == 60)
			if !extension {
				reached = true
				break
			}
			if count == maxExtHeaders {
				break
			}
			count++
			rest := pkt[off:end]
			var length int
			switch nh {
			case 44:
				if len(rest) < 8 {
					break walk
				}
				r.frag = true
				nh = rest[0]
				break walk
			case 51:
				if len(rest) < 8 {
					break walk
				}
				ahSPI = rest[4:8]
				length = 4 * (int(rest[1]) + 2)
			default:
				if len(rest) < 2 {
					break walk
				}
				length = 8 * (int(rest[1]) + 1)
			}
			if length > len(rest) {
				break walk
			}
			nh = rest[0]
			off += length
		}
		if reached {
			r.l4off = off
			words = refTransportWords(nh, pkt[off:end])
		}
		if words == nil && !r.frag {
			words = ahSPI
		}
	}
	r.proto = nh
	r.ports = words != nil

	kind := byte(1)
	if r.version == 6 {
		kind |= 4
	}
	if r.ports {
		kind |= 8
	}
	r.flowKey = append(r.flowKey, src.AsSlice()...)
	r.flowKey = append(r.flowKey, dst.AsSlice()...)
	if words == nil {
		words = []byte{0, 0, 0, 0}
	}
	r.flowKey = append(r.flowKey, words...)
	r.flowKey = append(r.flowKey, nh, kind)

	// The symmetric key: the lower endpoint (address, then port for
	// protocols with a port pair) first, and the kind's symmetric bit.
	sa, da := src.AsSlice(), dst.AsSlice()
	w := append([]byte(nil), words...)
	pair := r.ports && (nh == 6 || nh == 17 || nh == 33 || nh == 132 || nh == 136)
	c := bytes.Compare(da, sa)
	if c < 0 || c == 0 && pair && bytes.Compare(w[2:4], w[0:2]) < 0 {
		sa, da = da, sa
		if pair {
			w = []byte{w[2], w[3], w[0], w[1]}
		}
	}
	r.symKey = append(append(append(append([]byte(nil), sa...), da...), w...), nh, kind|0x10)

	family := byte(0)
	if r.version == 6 {
		family = 4
	}
	r.srcKey = append(src.AsSlice(), 2|family)
	r.dstKey = append(dst.AsSlice(), 3|family)
	return r
}

// refTransportWords returns the four key bytes a transport header gives,
// or nil if its protocol has none or the header is too short.
func refTransportWords(proto byte, l4 []byte) []byte {
	switch proto {
	case 6, 17, 33, 132, 136, 50: // TCP, UDP, DCCP, SCTP, UDP-Lite: ports; ESP: SPI
		if len(l4) >= 4 {
			return l4[:4]
		}
	case 1: // ICMP echo reply, echo, timestamp, timestamp reply
		if len(l4) >= 8 && (l4[0] == 0 || l4[0] == 8 || l4[0] == 13 || l4[0] == 14) {
			return []byte{l4[4], l4[5], 0, 0}
		}
	case 58: // ICMPv6 echo request and reply
		if len(l4) >= 8 && (l4[0] == 128 || l4[0] == 129) {
			return []byte{l4[4], l4[5], 0, 0}
		}
	case 47: // GRE
		if len(l4) < 4 {
			return nil
		}
		checksum := l4[0]&0x80 != 0
		routing := l4[0]&0x40 != 0
		keyed := l4[0]&0x20 != 0
		version := l4[1] & 7
		if !keyed || routing || version > 1 {
			return nil
		}
		at := 4
		if checksum {
			at = 8
		}
		if len(l4) < at+4 {
			return nil
		}
		if version == 1 { // PPTP: payload length (varies), call ID
			return []byte{0, 0, l4[at+2], l4[at+3]}
		}
		return l4[at : at+4]
	}
	return nil
}
