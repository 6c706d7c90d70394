package iphdr

import (
	"encoding/binary"
	"errors"
)

// VnetHdrLen is the length of a virtio-net header (struct virtio_net_hdr
// without the num_buffers field): the 10 bytes a Linux TUN opened with
// IFF_VNET_HDR puts before every packet it delivers and expects before
// every packet written to it.
const VnetHdrLen = 10

// Flags of [VnetHdr.Flags].
const (
	// VnetNeedsCsum says the transport checksum is not complete: the
	// sender left the pseudo-header's partial sum in the checksum field,
	// which sits CsumOffset bytes after CsumStart, and whoever puts the
	// packet on a wire must sum from CsumStart to the packet's end and
	// store the result there.
	VnetNeedsCsum = 1
	// VnetDataValid says the receiver already checked the checksum.
	VnetDataValid = 2
)

// Kinds of [VnetHdr.GSOType]: what a super-packet is to be cut into.
const (
	// GSONone is a single packet.
	GSONone = 0
	// GSOTCPv4 is an IPv4 TCP super-packet (TSO).
	GSOTCPv4 = 1
	// GSOUDP is IPv4 UDP fragmentation offload (UFO), which Linux no
	// longer produces; [SplitGSO] refuses it.
	GSOUDP = 3
	// GSOTCPv6 is an IPv6 TCP super-packet (TSO).
	GSOTCPv6 = 4
	// GSOUDPL4 is a UDP super-packet cut into whole datagrams (UDP GSO,
	// USO), over IPv4 or IPv6.
	GSOUDPL4 = 5
	// GSOECN is a bit on top of the kind: the TCP super-packet carries
	// CWR, which only the first segment may keep.
	GSOECN = 0x80
)

// ErrVnetHdr reports a virtio-net header that no Linux sender produces:
// unknown flag bits or GSO kind, a super-packet without a segment size, or
// a checksum field past 64 KiB.
var ErrVnetHdr = errors.New("iphdr: bad virtio-net header")

// VnetHdr is a virtio-net header as a Linux TUN with IFF_VNET_HDR carries
// it before each packet. Its 16-bit fields are little-endian on the wire:
// a TUN uses the host's byte order unless told otherwise (TUNSETVNETLE,
// TUNSETVNETBE), and this package reads and writes little-endian, the order
// of x86, arm64 and every host Go's linux ports commonly run on. A big-endian
// host must set TUNSETVNETLE on the device.
type VnetHdr struct {
	// Flags holds VnetNeedsCsum and VnetDataValid.
	Flags uint8
	// GSOType is GSONone or a GSO kind, possibly with GSOECN.
	GSOType uint8
	// HdrLen is the sender's hint for the length of the headers; a TUN
	// reports its linear head, which may be longer. [SplitGSO] finds the
	// headers itself and does not rely on it.
	HdrLen uint16
	// GSOSize is the payload bytes per segment (the TCP MSS, or the UDP
	// datagram's payload), for a super-packet.
	GSOSize uint16
	// CsumStart is the offset from the start of the IP packet where the
	// checksum's sum begins (the transport header) when VnetNeedsCsum is
	// set.
	CsumStart uint16
	// CsumOffset is where the checksum field lies after CsumStart: 16 for
	// TCP, 6 for UDP.
	CsumOffset uint16
}

// ParseVnetHdr reads the virtio-net header at the start of b. It returns
// [ErrTruncated] for fewer than VnetHdrLen bytes and [ErrVnetHdr] for a
// header no sender produces (see [VnetHdr.Check]); the fields it read are
// returned with the error.
func ParseVnetHdr(b []byte) (VnetHdr, error) {
	if len(b) < VnetHdrLen {
		return VnetHdr{}, ErrTruncated
	}
	h := VnetHdr{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.LittleEndian.Uint16(b[2:4]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:6]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:8]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:10]),
	}
	return h, h.Check()
}

// Put writes h into b[:VnetHdrLen]; it returns [ErrTruncated] and writes
// nothing if b is shorter.
func (h VnetHdr) Put(b []byte) error {
	if len(b) < VnetHdrLen {
		return ErrTruncated
	}
	b[0], b[1] = h.Flags, h.GSOType
	binary.LittleEndian.PutUint16(b[2:4], h.HdrLen)
	binary.LittleEndian.PutUint16(b[4:6], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:8], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:10], h.CsumOffset)
	return nil
}

// Kind returns the GSO kind without the GSOECN bit.
func (h VnetHdr) Kind() uint8 { return h.GSOType &^ GSOECN }

// IsGSO reports whether h describes a super-packet.
func (h VnetHdr) IsGSO() bool { return h.Kind() != GSONone }

// Check reports [ErrVnetHdr] if h has flag bits other than VnetNeedsCsum
// and VnetDataValid, a kind other than the GSO constants, GSOECN on a
// kind that is not TCP, a GSO kind with a zero GSOSize, or a checksum
// field (with VnetNeedsCsum) that would end past 65535. It does
// not look at the packet; [GSOSegments] and [SplitGSO] check the header
// against it.
func (h VnetHdr) Check() error {
	if h.Flags&^(VnetNeedsCsum|VnetDataValid) != 0 {
		return ErrVnetHdr
	}
	switch h.Kind() {
	case GSONone:
		if h.GSOType&GSOECN != 0 {
			return ErrVnetHdr
		}
	case GSOTCPv4, GSOTCPv6:
	case GSOUDP, GSOUDPL4:
		if h.GSOType&GSOECN != 0 {
			return ErrVnetHdr
		}
	default:
		return ErrVnetHdr
	}
	if h.IsGSO() && h.GSOSize == 0 {
		return ErrVnetHdr
	}
	if h.Flags&VnetNeedsCsum != 0 && int(h.CsumStart)+int(h.CsumOffset)+2 > 0xffff {
		return ErrVnetHdr
	}
	return nil
}
