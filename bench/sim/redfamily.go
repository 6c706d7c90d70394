package sim

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
)

// REDParams overrides the RED family's settings for one run (the
// red-family scenario sets them to ns-3's). Zero fields keep the defaults
// of the "red", "gentle-red" and "ared" entries of the AQM table.
type REDParams struct {
	// Weight is w_q for RED and Gentle RED. Zero means the automatic
	// 1 − exp(−1/C). Adaptive RED always uses the automatic weight (as
	// ns-3's ARED switch does).
	Weight float64 `json:",omitempty"`
	// MaxP is max_p for RED and Gentle RED. Zero means red.DefaultMaxP.
	MaxP float64 `json:",omitempty"`
	// AREDMaxP is Adaptive RED's initial max_p. Zero means red.DefaultMaxP.
	AREDMaxP float64 `json:",omitempty"`
	// Wait turns on red.Config.Wait for all three variants: ns-2's wait_
	// and ns-3's RedQueueDisc Wait (true by default there), which waits
	// until count·p_b ≥ 1 after an early drop and so drops at about 2·p_b/3
	// instead of 2·p_b/(1+p_b). False keeps Floyd and Jacobson's spacing.
	Wait bool `json:",omitempty"`
	// MeanPacketBytes is RED's mean packet size in bytes (its packet time
	// for the idle decay and the automatic weight). Zero means the run's
	// MSS.
	MeanPacketBytes int `json:",omitempty"`
	// DevicePackets, if positive, puts a drop-free FIFO of that many
	// packets between the RED queue and the link, as the transmit queue of
	// an ns-3 point-to-point device sits under its queue disc: the link
	// sends from the FIFO, and RED's queue holds only what the full FIFO
	// cannot take. Its size comes on top of BufferPackets.
	DevicePackets int `json:",omitempty"`
}

// deviceQueue is a RED queue (the "queue disc") feeding a FIFO of fixed
// capacity (the "device queue") from which the link dequeues, with ns-3's
// flow control: a packet goes from the disc to the device whenever the
// device has room, and the device never drops (the disc stops while it is
// full). The disc's average and thresholds therefore see only the packets
// the device cannot hold.
type deviceQueue struct {
	disc     aqm.Queue[uint64]
	dev      *ring.Ring[aqm.Packet[uint64]]
	devBytes int
	// moved counts the packets (and bytes) the disc has handed to the
	// device and that are still there, to take them out of the disc's
	// Dequeued count.
	moved aqm.Count
	// discArea is the integral of the disc's length over time
	// (packet·ns) from discStart (the first event at or after from) to
	// discLast.
	discArea            float64
	discStart, discLast aqm.Time
	started             bool
	from                aqm.Time
}

func newDeviceQueue(disc aqm.Queue[uint64], capacity int) *deviceQueue {
	return &deviceQueue{disc: disc, dev: ring.New[aqm.Packet[uint64]](capacity)}
}

// note adds the disc's length since the last event to discArea; call it
// before the length changes.
func (d *deviceQueue) note(now aqm.Time) {
	if !d.started {
		if now >= d.from {
			d.started, d.discStart, d.discLast = true, now, now
		}
		return
	}
	d.discArea += float64(d.disc.Len()) * float64(d.discLast.Since(now))
	d.discLast = max(d.discLast, now)
}

// DiscAvgPackets returns the time-average length of the disc alone (what
// ns-3 reports as the queue disc's size), from the first event at or after
// from to the last event.
func (d *deviceQueue) DiscAvgPackets() float64 {
	if span := d.discStart.Since(d.discLast); span > 0 {
		return d.discArea / float64(span)
	}
	return 0
}

// refill moves packets from the disc to the device while it has room.
func (d *deviceQueue) refill(now aqm.Time) {
	for !d.dev.Full() {
		p, ok := d.disc.Dequeue(now)
		if !ok {
			return
		}
		d.dev.PushBack(p)
		d.devBytes += int(p.Size)
		d.moved.Add(p.Size)
	}
}

// Enqueue offers p to the disc (which decides on its own length), then
// lets the device take what it has room for.
func (d *deviceQueue) Enqueue(p aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	d.note(now)
	v := d.disc.Enqueue(p, now)
	d.refill(now)
	return v
}

// Dequeue hands the link the device's head packet and refills the device.
func (d *deviceQueue) Dequeue(now aqm.Time) (aqm.Packet[uint64], bool) {
	d.note(now)
	d.refill(now)
	p, ok := d.dev.PopFront()
	if !ok {
		return p, false
	}
	d.devBytes -= int(p.Size)
	d.moved.Packets--
	d.moved.Bytes -= uint64(p.Size)
	d.refill(now)
	return p, true
}

func (d *deviceQueue) Len() int     { return d.disc.Len() + d.dev.Len() }
func (d *deviceQueue) Backlog() int { return d.disc.Backlog() + d.devBytes }

// Stats are the disc's, with the packets waiting in the device counted as
// queued rather than dequeued.
func (d *deviceQueue) Stats() aqm.Stats {
	s := d.disc.Stats()
	s.Dequeued.Packets -= d.moved.Packets
	s.Dequeued.Bytes -= d.moved.Bytes
	s.Len += d.dev.Len()
	s.Backlog += d.devBytes
	return s
}

// ns-3's red-vs-ared example (src/traffic-control/examples/red-vs-ared.cc,
// Mohit P. Tahiliani, NITK Surathkal, 2015), the published RED/ARED setup
// the red-family scenario follows, with the ns-3 defaults it relies on
// (RedQueueDisc, TcpSocket and TcpSocketBase attributes of that era). The
// bottleneck rate and the duration are the (2 Mb/s, 60 s); the
// example itself runs 1 Mb/s for 14 s of traffic.
const (
	redFamilyFlows         = 10                    // nLeaf
	redFamilyRateBps       = 2e6                   // the study's rate (ns-3's example runs 1 Mb/s)
	redFamilyBottleneckOWD = 50 * time.Millisecond // bottleNeckLinkDelay
	redFamilyAccessOWD     = 1 * time.Millisecond  // pointToPointLeaf delay (10 Mb/s)
	redFamilySegmentBytes  = 536                   // ns-3 TcpSocket SegmentSize default
	redFamilyHeaderBytes   = 40                    // IPv4 + TCP headers without options
	redFamilyMeanPktBytes  = 512                   // pktSize: OnOff PacketSize and RED MeanPktSize
	redFamilyMinTh         = 5                     // redMinTh
	redFamilyMaxTh         = 15                    // redMaxTh
	redFamilyDiscLimit     = 1000                  // queueDiscLimitPackets
	redFamilyNS3DevicePkts = 100                   // maxPackets: DropTailQueue under the queue disc (not used, see below)
	redFamilyDevicePackets = 0                     // ours: RED sees the whole queue
	redFamilyWeight        = 0.002                 // RedQueueDisc QW default
	redFamilyMaxP          = 1.0 / 50              // RedQueueDisc LInterm default 50
	redFamilyAREDMaxP      = 1.0 / 10              // the example sets LInterm 10 for ARED
	redFamilyWait          = true                  // RedQueueDisc Wait default (ns-2 wait_)
	redFamilyMinRTO        = time.Second           // TcpSocketBase MinRto default (RFC 6298)
	redFamilyStart         = time.Second           // clientApps.Start(1 s)
	redFamilyDuration      = 60 * time.Second      // the study's duration
	redFamilyWarmup        = 10 * time.Second      // ours: steady state only
	redFamilySample        = time.Second           // throughput CoV interval (ours)
)

// The example's queue disc sits on a 100-packet drop-tail device queue
// (redFamilyNS3DevicePkts) that ns-3's flow control fills first. At 2 Mb/s
// that device queue holds 230 ms of packets, the link never idles, RED
// manages only the overflow (about 8 packets) and the three variants tie at
// 100 % utilization with no throughput variation: a comparison of nothing.
// The scenario therefore leaves the device queue out, so that RED manages the
// whole queue; REDParams.DevicePackets = redFamilyNS3DevicePkts restores the
// example's stack.

// redFamilyRTT is every flow's base RTT: the sender's access link, the
// bottleneck and the receiver's access link, both ways: 2·(1+50+1) ms.
const redFamilyRTT = 2 * (redFamilyAccessOWD + redFamilyBottleneckOWD + redFamilyAccessOWD)

// redFamilyScenario follows ns-3's red-vs-ared example (see the constants
// above) with the rate and duration.
var redFamilyScenario = Scenario{
	Name: "red-family",
	Desc: fmt.Sprintf("ns-3's red-vs-ared setup: %d long-lived NewReno (SACK) flows, Not-ECT, base RTT %v "+
		"(10 Mb/s 1 ms access links, 50 ms bottleneck), %d-byte segments (%d on the wire), through a 2 Mb/s bottleneck for 60 s "+
		"(flows start at 1 s, first 10 s excluded); RED, Gentle RED and ARED with identical thresholds (min 5, max 15 packets), "+
		"w_q 0.002 and max_p 1/50 (ARED: automatic w_q, initial max_p 1/10), ns-3's Wait between drops, mean packet 512 B, 1000-packet queue disc "+
		"with no device queue under it (ns-3's 100-packet one would hold all the queue), min RTO 1 s; throughput sampled every 1 s",
		redFamilyFlows, redFamilyRTT, redFamilySegmentBytes, redFamilySegmentBytes+redFamilyHeaderBytes),
	Published: "ns-3 comparison: ~90% utilization for all three; RED the lowest throughput CoV; ARED the fewest drops; " +
		"Gentle RED the lowest mean queue",
	DefaultReps: 5,
	Runs: func(o Options) ([]Run, error) {
		names, err := pickAQMs(o, []string{"red", "ared", "gentle-red"})
		if err != nil {
			return nil, err
		}
		n := orInt(o.Flows, redFamilyFlows)
		rtts := orRTTs(o.RTTs, []time.Duration{redFamilyRTT})
		cfg := Config{
			RateBps: orRate(o.RateBps, redFamilyRateBps), MSS: redFamilySegmentBytes + redFamilyHeaderBytes,
			Duration: orDur(o.Duration, redFamilyDuration), Seed: o.Seed, MinRTO: redFamilyMinRTO,
			SampleInterval: redFamilySample, StartJitter: time.Second, Series: o.Series,
		}
		cfg.Warmup = min(redFamilyWarmup, cfg.Duration/6)
		for i := range n {
			cfg.Flows = append(cfg.Flows, FlowSpec{Kind: Reno, RTT: rtts[i%len(rtts)], Start: redFamilyStart, Group: "tcp"})
		}
		var runs []Run
		for _, a := range names {
			runs = append(runs, Run{Scenario: "red-family", Group: fmt.Sprintf("%d flows", n), AQM: a,
				BufferPackets: redFamilyDiscLimit, REDMinThreshold: redFamilyMinTh, REDMaxThreshold: redFamilyMaxTh,
				RED: REDParams{
					Weight: redFamilyWeight, MaxP: redFamilyMaxP, AREDMaxP: redFamilyAREDMaxP, Wait: redFamilyWait,
					MeanPacketBytes: redFamilyMeanPktBytes, DevicePackets: redFamilyDevicePackets,
				},
				Config: cfg})
		}
		return runs, nil
	},
}
