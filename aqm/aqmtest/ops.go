package aqmtest

import (
	"fmt"
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// opKind says what a [traceOp] does.
type opKind uint8

const (
	// opEnqueue offers Count packets (at least one) at the same instant.
	opEnqueue opKind = iota
	// opDequeue asks for up to Count packets (at least one) at the same
	// instant, stopping early if the queue reports empty.
	opDequeue
)

// traceOp is one step of a trace: move time by Dt (which may be negative), then
// enqueue or dequeue.
type traceOp struct {
	Kind  opKind
	Count int
	// Dt moves the clock before the op. JumpTo, if non-zero, sets it instead.
	Dt     time.Duration
	JumpTo aqm.Time
	// Size, Hash and ECN describe the packets of an opEnqueue. ECN may carry
	// stray bits above the ECN field.
	Size uint32
	Hash uint32
	ECN  aqm.ECN
	// Segments is the packets' [aqm.Meta.Segments]: above one, each is a
	// GSO super-packet of that many wire packets. [decode] leaves it zero;
	// the GSO checks set it.
	Segments uint16
}

func (o traceOp) String() string {
	t := fmt.Sprintf("dt=%v", o.Dt)
	if o.JumpTo != 0 {
		t = fmt.Sprintf("jump=%d", int64(o.JumpTo))
	}
	if o.Kind == opDequeue {
		return fmt.Sprintf("deq×%d %s", o.Count, t)
	}
	if o.Segments > 1 {
		return fmt.Sprintf("enq×%d %s size=%d segs=%d hash=%#x ecn=%#x", o.Count, t, o.Size, o.Segments, o.Hash, uint8(o.ECN))
	}
	return fmt.Sprintf("enq×%d %s size=%d hash=%#x ecn=%#x", o.Count, t, o.Size, o.Hash, uint8(o.ECN))
}

// hugeTime is where the decoder's long jumps land: 2^62 ns, about 146 years,
// far past any real uptime yet with room for any interval to be added
// without overflowing int64.
const hugeTime = aqm.Time(1 << 62)

// decode turns arbitrary bytes into a trace, four bytes per op (a trailing
// partial group is ignored). The mapping favours ordinary traffic (1500-byte
// packets, microsecond-to-millisecond steps, a handful of flows) and reaches
// every odd case: size 0 and huge sizes, stray ECN bits, bursts beyond any
// limit, backward time, idle gaps of hours and jumps to 2^62 ns.
//
//	b0: op kind      b1: size class or count      b2: time step      b3: flow and ECN
func decode(data []byte) []traceOp {
	ops := make([]traceOp, 0, len(data)/4)
	for i := 0; i+4 <= len(data); i += 4 {
		b0, b1, b2, b3 := data[i], data[i+1], data[i+2], data[i+3]
		var o traceOp
		switch b0 % 8 {
		case 0, 1, 2, 3:
			o = traceOp{Kind: opEnqueue, Count: 1, Size: decodeSize(b1)}
		case 4, 5:
			o = traceOp{Kind: opDequeue, Count: 1}
		case 6: // burst of arrivals
			o = traceOp{Kind: opEnqueue, Count: 1 + int(b1)*4, Size: 1000 + uint32(b0>>3)*16}
		case 7: // run of departures
			o = traceOp{Kind: opDequeue, Count: 1 + int(b1)*2}
		}
		o.Dt, o.JumpTo = decodeStep(b2)
		o.Hash, o.ECN = decodeFlow(b3)
		ops = append(ops, o)
	}
	return ops
}

func decodeSize(b byte) uint32 {
	switch b >> 5 {
	case 0:
		if b == 0 {
			return 0
		}
		return 40 + uint32(b)*8 // 48..288: small packets, ACKs
	case 7:
		return [...]uint32{9000, 65535, 1 << 20, math.MaxUint32}[b&3]
	case 6:
		return 64 + uint32(b&31)*45 // 64..1459
	}
	return 1500
}

func decodeStep(b byte) (time.Duration, aqm.Time) {
	x := time.Duration(b & 63)
	switch b >> 6 {
	case 0:
		return 0, 0
	case 1:
		return x * 10 * time.Microsecond, 0
	case 2:
		return x * time.Millisecond, 0
	}
	switch {
	case x < 40:
		return x * 25 * time.Millisecond, 0 // up to about one second
	case x < 52:
		return -(x - 39) * 10 * time.Millisecond, 0 // backwards, up to 120 ms
	case x < 60:
		return (x - 51) * time.Hour, 0 // idle gaps of hours
	case x < 62:
		return 0, hugeTime + aqm.Time(x-60)*aqm.Time(time.Hour)
	default:
		return -(x - 61) * time.Hour, 0 // far backwards
	}
}

func decodeFlow(b byte) (uint32, aqm.ECN) {
	ecn := aqm.ECN(b>>3) & aqm.ECNMask
	switch b >> 5 {
	case 7:
		ecn |= 0xf0 // stray bits above the ECN field
		return uint32(b & 7), ecn
	case 6:
		return uint32(b) * 2654435761, ecn // many distinct flows
	}
	return uint32(b & 7), ecn
}
