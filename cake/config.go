package cake

import (
	"errors"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/cfgerr"
)

// Defaults and bounds of [Config].
const (
	// defaultTarget is the base COBALT target, 5 ms (tc-cake's default,
	// rtt/20). Slow tins raise it to 1.5 MTU times (see [TinDetail]).
	defaultTarget = 5 * time.Millisecond
	// defaultInterval is the base COBALT interval, 100 ms (tc-cake's
	// "internet" rtt).
	defaultInterval = 100 * time.Millisecond
	// defaultLimitPackets is the most packets the queue holds, 10240
	// (Linux's fixed qdisc limit for CAKE).
	defaultLimitPackets = 10240
	// maxLimitPackets is the largest LimitPackets accepted. Storage for
	// this many packets is allocated up front (see [Detail.MemoryBytes]).
	maxLimitPackets = 1 << 20
	// maxMemoryLimitBytes is the largest MemoryLimitBytes accepted, 1 GiB.
	// It bounds a counter, not an allocation: the byte limit allocates
	// nothing.
	maxMemoryLimitBytes = 1 << 30
	// minMemoryBytes is the smallest byte limit derived from a rate, 4 MiB
	// (Linux's floor).
	minMemoryBytes = 4 << 20
	// mtuBytes is the packet size the tins' parameters are derived from: an
	// Ethernet MTU plus its 14-byte header, as Linux's psched_mtu.
	mtuBytes = 1514
	// maxInterval is the largest Interval accepted, one hour: the bound
	// cobalt.Control states for its Interval.
	maxInterval = time.Hour
	// minOverhead and maxOverhead bound Overhead (tc's limits).
	minOverhead = -64
	maxOverhead = 256
	// maxMPU bounds MPU (tc's limit).
	maxMPU = 256
	// minRateBytes is the slowest rate the shaper runs at, 64 bytes per
	// second (Linux's MIN_RATE): a slower tin still drains.
	minRateBytes = 64
	// queuesPerTin is the number of flow queues of each tin (8-way
	// set-associative), and hostsPerTin the size of each host table.
	queuesPerTin = 1024
	hostsPerTin  = 1024
	ways         = 8
)

// TinMode selects how packets are sorted into DiffServ tins by their DSCP.
type TinMode uint8

const (
	// DiffServ3 (the default) has three tins: Bulk (CS1, LE) with 1/16 of
	// the rate as threshold, Best Effort (everything else) and Voice (CS7,
	// CS6, EF, VOICE-ADMIT, and DSCP 4) with 1/4.
	DiffServ3 TinMode = iota
	// BestEffort puts every packet in one tin.
	BestEffort
	// DiffServ4 has four tins: Bulk (CS1, LE; 1/16), Best Effort, Video
	// (CS2, CS3, AF2x, AF3x, AF4x, DSCP 4; 1/2) and Voice (CS4, CS5, CS6,
	// CS7, EF, VOICE-ADMIT; 1/4).
	DiffServ4
	// DiffServ8 has eight tins with thresholds rate·(7/8)^i (see the
	// package documentation for the map).
	DiffServ8
	// Precedence uses the IP precedence (DSCP >> 3) as tin, eight tins
	// with diffserv8's thresholds.
	Precedence
)

// String returns tc's keyword for m.
func (m TinMode) String() string {
	switch m {
	case DiffServ3:
		return "diffserv3"
	case BestEffort:
		return "besteffort"
	case DiffServ4:
		return "diffserv4"
	case DiffServ8:
		return "diffserv8"
	case Precedence:
		return "precedence"
	}
	return "tinmode(" + strconv.Itoa(int(m)) + ")"
}

// FlowMode selects what the queue isolates: flows, hosts, or both.
type FlowMode uint8

const (
	// TripleIsolate (the default) gives fairness per flow and, among the
	// flows of a tin, per source host and per destination host: a flow's
	// quantum is divided by the bulk flows of the busier of its two hosts.
	TripleIsolate FlowMode = iota
	// FlowBlind puts all packets of a tin in one queue.
	FlowBlind
	// SrcHost gives one queue per source host.
	SrcHost
	// DstHost gives one queue per destination host.
	DstHost
	// Hosts gives one queue per (source, destination) host pair.
	Hosts
	// Flows gives one queue per flow (Packet.Hash), no host fairness.
	Flows
	// DualSrcHost gives one queue per flow and fairness among source hosts.
	DualSrcHost
	// DualDstHost gives one queue per flow and fairness among destination
	// hosts.
	DualDstHost
)

// Mode bits, as Linux's: source host, destination host, flows.
const (
	bitSrc   = 1
	bitDst   = 2
	bitFlows = 4
)

// bits returns m's isolation bits.
func (m FlowMode) bits() uint8 {
	switch m {
	case FlowBlind:
		return 0
	case SrcHost:
		return bitSrc
	case DstHost:
		return bitDst
	case Hosts:
		return bitSrc | bitDst
	case Flows:
		return bitFlows
	case DualSrcHost:
		return bitFlows | bitSrc
	case DualDstHost:
		return bitFlows | bitDst
	}
	return bitFlows | bitSrc | bitDst
}

// String returns tc's keyword for m.
func (m FlowMode) String() string {
	switch m {
	case TripleIsolate:
		return "triple-isolate"
	case FlowBlind:
		return "flowblind"
	case SrcHost:
		return "srchost"
	case DstHost:
		return "dsthost"
	case Hosts:
		return "hosts"
	case Flows:
		return "flows"
	case DualSrcHost:
		return "dual-srchost"
	case DualDstHost:
		return "dual-dsthost"
	}
	return "flowmode(" + strconv.Itoa(int(m)) + ")"
}

// Framing is the link-layer cell framing the shaper compensates for.
type Framing uint8

const (
	// NoFraming charges the packet length plus Overhead (at least MPU).
	NoFraming Framing = iota
	// ATM charges whole 53-byte cells that carry 48 bytes each (ADSL).
	ATM
	// PTM charges 65 bytes for every started 64 (VDSL2's 64b/65b coding).
	PTM
)

// String returns tc's keyword for f.
func (f Framing) String() string {
	switch f {
	case NoFraming:
		return "noatm"
	case ATM:
		return "atm"
	case PTM:
		return "ptm"
	}
	return "framing(" + strconv.Itoa(int(f)) + ")"
}

// ACKFilter selects the TCP ACK filter.
type ACKFilter uint8

const (
	// ACKFilterOff (the default) queues every ACK.
	ACKFilterOff ACKFilter = iota
	// ACKFilterConservative drops a queued pure ACK once two later
	// queued ACKs of the same flow make it redundant.
	ACKFilterConservative
	// ACKFilterAggressive also drops a redundant ACK queued right before
	// the arriving one.
	ACKFilterAggressive
)

// Config configures a CAKE [Queue]. The zero value is tc-cake's default:
// unshaped, diffserv3, triple-isolate, target 5 ms, interval 100 ms, no
// overhead compensation, no ACK filter, 10240 packets.
type Config struct {
	// Rate is the shaper's rate. Zero (the default) means unshaped: packets
	// leave as fast as Dequeue is called and tins share by weight.
	Rate aqm.Rate
	// TinMode selects the DiffServ tins; the zero value is [DiffServ3].
	TinMode TinMode
	// FlowMode selects flow and host isolation; the zero value is
	// [TripleIsolate].
	FlowMode FlowMode
	// Target and Interval are COBALT's base target and interval (tc's rtt
	// sets Interval to rtt and Target to rtt/20). Each tin raises them for
	// its rate: target ≥ 1.5 MTU times, interval = Interval + that rise.
	// Zero means 5 ms and 100 ms; Target must be
	// below Interval; Interval at most one hour.
	Target   time.Duration
	Interval time.Duration
	// Overhead is added to every packet's Size for the shaper and the DRR
	// deficits, in [minOverhead, maxOverhead]; MPU is the smallest length
	// charged, in [0, maxMPU]; Framing adds ATM or PTM cell framing. Set
	// them together with [Overhead.Apply] and the presets ([Ethernet],
	// [DOCSIS], [PPPoEPTM] ...). Size is then the IP packet length.
	Overhead int
	MPU      int
	Framing  Framing
	// Ingress charges every dropped packet to the shaper as if it had been
	// sent (for shaping the downlink before the bottleneck) and makes
	// COBALT wait for 2 MTU times per bulk flow of the tin before it
	// signals.
	Ingress bool
	// ACKFilter drops TCP ACKs made redundant by later ones of the same
	// flow; it needs [Info] from [Queue.EnqueueInfo] (see [Classifier]).
	ACKFilter ACKFilter
	// LimitPackets is the most packets queued; beyond it, as beyond the
	// byte limit, the queue drops from the head of its longest flow queue.
	// Zero means 10240; at most 1048576. Each
	// packet slot is preallocated: about 40 bytes for a word-sized payload,
	// 56 more with the ACK filter ([Detail] reports the total).
	LimitPackets int
	// MemoryLimitBytes is the most bytes (sum of Size) queued. Zero means
	// Linux's rule: with a Rate, four Intervals at the rate, at least
	// 4 MiB; always at most LimitPackets·1514 bytes. A limit that holds
	// more than a second of queue at the link rate defeats the AQM under
	// unresponsive traffic: size it with [ConfigForLink]. At most
	// 1 GiB.
	MemoryLimitBytes int
	// DisableFloodGuard turns the flood guard off (see the package doc):
	// every packet then finds or claims a flow queue of its own and a flow
	// queue that was idle gets sparse-flow priority, as in Linux, so a
	// sender that uses new ports for every packet can starve the other
	// flows. With the guard on, the default, packets of flows that have not
	// recurred wait in one shared queue per tin once they arrive faster
	// than the guard admits new flows. It can change only while the queue
	// is empty.
	DisableFloodGuard bool
	// Seed keys the flow and host hashes and seeds the random draws (BLUE
	// and the dithered quantum). Zero (the default, for production) draws
	// a secret from crypto/rand; a fixed seed makes a queue reproducible
	// (tests, simulations). [Queue.Config] reports the seed in use.
	Seed uint64
}

// Overhead is a link-layer overhead preset: bytes added per packet, the
// minimum packet unit and the cell framing, as tc-cake's keywords.
type Overhead struct {
	Bytes   int
	MPU     int
	Framing Framing
}

// overheadPresets are the presets of tc-cake(8), by its keywords, for
// packets whose Size is the IP length.
var overheadPresets = map[string]Overhead{
	"raw":             {},                        // Size as it is (the default)
	"conservative":    {Bytes: 48, Framing: ATM}, // the worst ATM case
	"ethernet":        {Bytes: 38, MPU: 84},      // preamble, SFD, MACs, EtherType, FCS, gap
	"docsis":          {Bytes: 18, MPU: 64},      // a DOCSIS cable modem's Ethernet frame
	"pppoe-ptm":       {Bytes: 30, Framing: PTM}, // PPPoE over VDSL2
	"bridged-ptm":     {Bytes: 22, Framing: PTM}, // bridged Ethernet over VDSL2
	"pppoa-vcmux":     {Bytes: 10, Framing: ATM}, // PPP over ATM (ADSL)
	"pppoa-llc":       {Bytes: 14, Framing: ATM},
	"pppoe-vcmux":     {Bytes: 32, Framing: ATM}, // PPPoE over ATM
	"pppoe-llcsnap":   {Bytes: 40, Framing: ATM},
	"bridged-vcmux":   {Bytes: 24, Framing: ATM}, // bridged Ethernet over ATM
	"bridged-llcsnap": {Bytes: 32, Framing: ATM},
	"ipoa-vcmux":      {Bytes: 8, Framing: ATM}, // IP over ATM
	"ipoa-llcsnap":    {Bytes: 16, Framing: ATM},
}

// OverheadPreset returns the overhead tc-cake(8) names by keyword: "raw"
// (Size as it is), "conservative" (48 bytes, ATM), "ethernet" (38 bytes,
// MPU 84), "docsis" (18 bytes, MPU 64), "pppoe-ptm" (30, PTM),
// "bridged-ptm" (22, PTM), and over ATM "pppoa-vcmux" (10), "pppoa-llc"
// (14), "pppoe-vcmux" (32), "pppoe-llcsnap" (40), "bridged-vcmux" (24),
// "bridged-llcsnap" (32), "ipoa-vcmux" (8) and "ipoa-llcsnap" (16). It
// reports false for any other name. Each preset is for packets whose Size
// is the IP length.
func OverheadPreset(name string) (Overhead, bool) {
	o, ok := overheadPresets[name]
	return o, ok
}

// Apply returns c with its Overhead, MPU and Framing set from o.
func (o Overhead) Apply(c Config) Config {
	c.Overhead, c.MPU, c.Framing = o.Bytes, o.MPU, o.Framing
	return c
}

// ConfigForLink returns the default configuration shaped to rate, with
// the byte limit sized for flows of round-trip time rtt
// ([aqm.Rate.BufferBytes]) and the packet limit to match. A queue from it
// shapes its own output ([aqm.Paced]): run the front in package front at
// rate 0. A zero rate (unknown or unlimited) gives the zero Config: an
// unshaped queue with the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		Rate:             rate,
		MemoryLimitBytes: rate.BufferBytes(rtt),
		LimitPackets:     max(rate.BufferPackets(rtt), 64),
	}
}

// Validate reports every field that is out of range, one
// [aqm.ConfigError] each, joined. It does not change c.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "cake", Field: field, Value: v, Rule: rule})
	}
	if c.TinMode > Precedence {
		bad("TinMode", c.TinMode, "must be one of diffserv3, besteffort, diffserv4, diffserv8, precedence")
	}
	if c.FlowMode > DualDstHost {
		bad("FlowMode", c.FlowMode, "must be a known isolation mode")
	}
	// COBALT's rules for its target and interval, under cake's name (with
	// cake's defaults, which zero fields keep in range).
	d := c.withDefaults()
	errs = append(errs, cfgerr.Relabel("cake", cobalt.Control{Target: d.Target, Interval: d.Interval}.Validate())...)
	if c.Overhead < minOverhead || c.Overhead > maxOverhead {
		bad("Overhead", c.Overhead, "must be in [-64, "+strconv.FormatUint(uint64(maxOverhead), 10)+"]")
	}
	if c.MPU < 0 || c.MPU > maxMPU {
		bad("MPU", c.MPU, "must be in [0, "+strconv.FormatUint(uint64(maxMPU), 10)+"]")
	}
	if c.Framing > PTM {
		bad("Framing", c.Framing, "must be NoFraming, ATM or PTM")
	}
	if c.ACKFilter > ACKFilterAggressive {
		bad("ACKFilter", c.ACKFilter, "must be off, conservative or aggressive")
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be in [0, "+strconv.Itoa(maxLimitPackets)+"]")
	}
	if c.MemoryLimitBytes < 0 || c.MemoryLimitBytes > maxMemoryLimitBytes {
		bad("MemoryLimitBytes", c.MemoryLimitBytes, "must be in [0, "+strconv.Itoa(maxMemoryLimitBytes)+"]")
	}
	// CAKE never drops the last packet of a flow queue (COBALT marks it at
	// most), so limits below two packets leave only the pruner's drops.
	if c.LimitPackets == 1 {
		// CAKE never drops a flow's last packet, so with one packet queued
		// only the limit drops.
		bad("LimitPackets", c.LimitPackets, "must be 0 or at least 2")
	}
	if c.MemoryLimitBytes > 0 && c.MemoryLimitBytes < 2*mtuBytes {
		// CAKE never drops a flow's last packet, and with less room full-size
		// packets are refused or pruned before COBALT can signal.
		bad("MemoryLimitBytes", c.MemoryLimitBytes, "must be 0 or at least 2×MTU ("+strconv.Itoa(2*mtuBytes)+")")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default set;
// Seed and MemoryLimitBytes are left to the queue.
func (c Config) withDefaults() Config {
	if c.Target == 0 {
		c.Target = defaultTarget
	}
	if c.Interval == 0 {
		c.Interval = defaultInterval
	}
	if c.LimitPackets == 0 {
		c.LimitPackets = defaultLimitPackets
	}
	if c.MemoryLimitBytes == 0 {
		c.MemoryLimitBytes = memoryLimit(c)
	}
	return c
}

// memoryLimit is Linux's rule for the byte limit when none is set: four
// intervals at the rate, at least 4 MiB, and at most LimitPackets·MTU.
func memoryLimit(c Config) int {
	capBytes := min(c.LimitPackets*mtuBytes, maxMemoryLimitBytes)
	if c.Rate == 0 {
		return capBytes
	}
	b := c.Rate.BytesIn(4 * c.Interval)
	return int(min(max(b, minMemoryBytes), int64(capBytes)))
}
