package front

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// keepTime is the longest a super-packet kept whole under [GSOAuto]
// may occupy the link at the path's rate: 2 ms, under half of CoDel's 5 ms
// target. A 64 KiB TCP super-packet, about 67 kB on the wire, takes 1.1 ms
// at 500 Mbit/s and 0.54 ms at 1 Gbit/s, so it is kept; at 50 Mbit/s it
// takes 10.8 ms and is split, while a super-packet of two or three
// segments (what TCP sends a flow paced at a few Mbit/s) is kept there
// too.
const keepTime = 2 * time.Millisecond

// GSOPolicy says what a packet path does with a GSO super-packet, a TCP or
// UDP packet of up to 64 KiB that a segmentation offload stands for
// (iphdr.SplitGSO, iphdr.GSOSegments), before its queue sees it.
//
// Split, each segment is queued as its own packet: the queue schedules,
// drops and marks wire packets, and a flow's burst interleaves with other
// flows at the granularity a wire would. Kept, the super-packet is queued
// whole, counted in [aqm.Meta.Segments], and a mark or a drop applies to
// all its segments at once; that saves a queue operation, a buffer and,
// behind a TUN with offloads, a write system call per segment, which is
// what limits a software router's packet rate. The cost of keeping is
// head-of-line delay: a fair queue serves a kept super-packet whole, so
// the flows behind it wait for its transmission time at the rate. GSOAuto
// therefore decides per super-packet by that time, not by a rate
// threshold: a path whose CPU cannot split at its rate (a router that
// finds itself saturated) should keep every super-packet instead, since a
// queue the AQM sees is better than one that builds up, unmanaged, in
// front of the path.
type GSOPolicy uint8

const (
	// GSOAuto keeps a super-packet whole when the path is unshaped (rate
	// 0) or when its wire bytes take at most 2 ms at the
	// rate, and splits it otherwise. It is the zero value.
	GSOAuto GSOPolicy = iota
	// GSOSplit always splits.
	GSOSplit
	// GSOKeep never splits.
	GSOKeep
)

// Split reports whether a path shaping at rate (0: unshaped) splits, under
// policy p, a super-packet that puts wireBytes on the wire, its segments'
// IP packets together (iphdr.GSOWireSize).
func (p GSOPolicy) Split(rate aqm.Rate, wireBytes int) bool {
	switch p {
	case GSOSplit:
		return true
	case GSOKeep:
		return false
	}
	if rate == 0 || wireBytes <= 0 {
		return false
	}
	return uint64(wireBytes) > keepBytes(rate)
}

// keepBytes returns the most wire bytes a super-packet may put on the wire
// for [GSOAuto] to keep it whole at rate: the bytes keepTime
// carries at the rate (250 000 at 1 Gbit/s).
func keepBytes(rate aqm.Rate) uint64 {
	// rate · keepTime / (8 · 1e9) in 128 bits: the high word stays
	// below the divisor for any rate, since keepTime < 8e9 ns.
	hi, lo := bits.Mul64(uint64(rate), uint64(keepTime))
	q, _ := bits.Div64(hi, lo, 8*uint64(time.Second))
	return q
}

// String returns "auto", "split" or "keep".
func (p GSOPolicy) String() string {
	switch p {
	case GSOAuto:
		return "auto"
	case GSOSplit:
		return "split"
	case GSOKeep:
		return "keep"
	}
	return "GSOPolicy(" + strconv.Itoa(int(p)) + ")"
}
