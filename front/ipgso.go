package front

import (
	"strconv"

	"github.com/aqmkit/aqmkit/aqm"
)

// DefaultSplitBelow is the rate below which [GSOAuto] cuts GSO
// super-packets into their segments: 1 Gb/s, where CAKE stops splitting.
const DefaultSplitBelow = aqm.Gbit

// GSOPolicy says what a packet path does with a GSO super-packet, a TCP or
// UDP packet of up to 64 KiB that a segmentation offload stands for
// (iphdr.SplitGSO, iphdr.GSOSegments), before its queue sees it.
//
// Split, each segment is queued as its own packet: the queue schedules,
// drops and marks wire packets, and a flow's burst interleaves with other
// flows at the granularity a wire would. Kept, the super-packet is queued
// whole, counted in [aqm.Meta.Segments], and a mark or a drop applies to
// all its segments at once; that saves a queue operation and a buffer per
// segment, which matters only when the link is fast. At 1 Gb/s a 64 KiB
// super-packet occupies the link for 0.5 ms; at 50 Mb/s, for 10 ms, a
// latency no fair queue should add to the flows behind it.
type GSOPolicy uint8

const (
	// GSOAuto splits when the rate is non-zero and below
	// [DefaultSplitBelow], and keeps super-packets when the path is
	// unshaped (rate 0) or at least that fast. It is the zero value.
	GSOAuto GSOPolicy = iota
	// GSOSplit always splits.
	GSOSplit
	// GSOKeep never splits.
	GSOKeep
)

// Split reports whether a path shaping at rate (0: unshaped) splits
// super-packets under policy p.
func (p GSOPolicy) Split(rate aqm.Rate) bool {
	switch p {
	case GSOSplit:
		return true
	case GSOKeep:
		return false
	}
	return rate != 0 && rate < DefaultSplitBelow
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
