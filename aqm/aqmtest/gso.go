package aqmtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// maxGSOSegments is the most segments the GSO checks put in one packet: a
// 64 KiB super-packet of 1448-byte TCP segments, as TUN offloads and the
// Linux stack build them, has 45; the checks use 1 to 44.
const maxGSOSegments = 44

// gsoMSS is the payload the GSO checks give each segment of a super-packet:
// Size = Segments × gsoMSS, a TCP segment of a 1500-byte MTU.
const gsoMSS = 1448

// gsoOps turns a trace into one of GSO super-packets: every enqueue op but
// one in four carries 1 to maxGSOSegments segments, and ordinary sizes grow
// with them (Size = segments × gsoMSS); size 0 and the huge sizes stay as
// they are, so the odd cases still run.
func gsoOps(ops []traceOp) []traceOp {
	out := make([]traceOp, len(ops))
	for i, o := range ops {
		if o.Kind == opEnqueue && i%4 != 0 {
			segs := 1 + (i*7+int(o.Hash&0xff))%maxGSOSegments
			o.Segments = uint16(segs)
			if o.Size >= 40 && o.Size <= 9000 {
				o.Size = uint32(segs) * gsoMSS
			}
		}
		out[i] = o
	}
	return out
}

// checkGSO plays random traces of super-packets under every check of the
// harness, which counts in wire packets: Len, Backlog, the limits, and
// Stats (each Count's Packets in segments, conservation in segments and in
// bytes, marks as segments).
func checkGSO(f Factory) error {
	var errs []error
	for s := range uint64(6) {
		if err := runTraceBudget(f, s, gsoOps(randomOps(300+s, 400)), randomTraceBudget); err != nil {
			errs = append(errs, fmt.Errorf("trace seed %d: %w", 300+s, err))
		}
	}
	return errors.Join(errs...)
}

// checkGSOLimits overruns the packet limit with super-packets of every size
// up to maxGSOSegments, single packets between them, from several flows and
// codepoints, and with super-packets larger than the whole limit: no queue
// may ever hold more wire packets than LimitPackets, however they are
// grouped.
func checkGSOLimits(f Factory) error {
	tr := trace{}
	n := f.burst()
	for i := 0; i < n; i++ {
		segs := uint16(1 + i%maxGSOSegments)
		tr = append(tr, traceOp{Kind: opEnqueue, Count: 1, Dt: 20 * time.Microsecond, Size: uint32(segs) * gsoMSS,
			Hash: uint32(i % 5), ECN: aqm.ECN(i % 4), Segments: segs})
		if i%3 == 0 {
			tr = tr.enq(1, 0, 1500, uint32(i%5), aqm.NotECT)
		}
		if i%17 == 0 {
			tr = tr.deq(2, time.Millisecond)
		}
	}
	if f.LimitPackets > 1 {
		// One super-packet of the whole limit, and one more than it.
		for _, segs := range []int{f.LimitPackets, f.LimitPackets + 1} {
			if segs <= 0xffff {
				tr = tr.deq(n, time.Millisecond)
				tr = append(tr, traceOp{Kind: opEnqueue, Count: 2, Dt: time.Millisecond, Size: 1500, Hash: 9, ECN: aqm.ECT0, Segments: uint16(segs)})
			}
		}
	}
	return runTrace(f, 11, tr.deq(n, time.Millisecond))
}

// checkGSOBurst is the Burst check on traces of super-packets.
func checkGSOBurst(f Factory) error {
	var errs []error
	for s := range uint64(4) {
		ops := gsoOps(randomOps(400+s, 400))
		if err := runBurst(f, s+1, burstSteps(ops, randomTraceBudget)); err != nil {
			errs = append(errs, fmt.Errorf("trace seed %d: %w", 400+s, err))
		}
	}
	return errors.Join(errs...)
}

// RunGSO runs only the GSO checks of [Run] (GSO, GSOLimits and GSOBurst)
// on the queues f builds, one subtest each: for a list of queues that
// [Run] already covers in their own packages, such as every queue of a
// registry built from its presets.
func RunGSO(t *testing.T, f Factory) {
	t.Helper()
	if f.New == nil {
		t.Fatal("aqmtest: Factory.New is nil")
	}
	for _, c := range checks {
		if c.name != "GSO" && c.name != "GSOLimits" && c.name != "GSOBurst" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			if err := c.fn(f); err != nil {
				t.Error(err)
			}
		})
	}
}
