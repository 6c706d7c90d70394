package red

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Defaults used when a [Config] field is left zero.
const (
	// defaultMaxP is max_p, the drop probability at MaxThreshold: 0.02, the
	// 1/50 of Floyd and Jacobson's simulations and the default of Linux tc
	// and ns-3 (LInterm 50).
	defaultMaxP = 0.02
	// defaultMeanPacketBytes is the mean packet size in bytes: 1000, the
	// default avpkt of Linux tc.
	defaultMeanPacketBytes = 1000
	// defaultLinkRate is the rate at which the queue is drained, used for
	// the idle decay and the automatic weight and thresholds: 100 Mbit/s.
	defaultLinkRate = 100 * aqm.Mbit
	// maxLinkRate is the largest LinkRate Validate accepts: 1000 Tbit/s. A
	// larger rate is a unit mistake.
	maxLinkRate = 1000 * aqm.Tbit
	// defaultTargetDelay is the queueing delay the automatic thresholds aim
	// at: 5 ms, the target delay of Floyd, Gummadi and Shenker (2001).
	defaultTargetDelay = 5 * time.Millisecond
	// defaultAdaptInterval is how often Adaptive RED adapts max_p: 0.5 s, as
	// in Floyd, Gummadi and Shenker (2001), Linux and ns-3.
	defaultAdaptInterval = 500 * time.Millisecond
	// defaultLimitPackets is the least default packet limit: 1000, Linux's
	// default txqueuelen.
	defaultLimitPackets = 1000
	// maxDerivedLimitPackets caps a packet limit that is derived from
	// another field (LimitPackets left zero): 131072 packets, whose storage
	// New allocates up front (4 MiB with a word-sized payload, see
	// [Detail.MemoryBytes]). In packet mode a MaxThreshold above it
	// requires an explicit LimitPackets.
	maxDerivedLimitPackets = 1 << 17

	// minAdaptiveMaxP and maxAdaptiveMaxP bound Adaptive RED's max_p:
	// [0.01, 0.5] (Floyd, Gummadi and Shenker 2001, Figure 3).
	minAdaptiveMaxP = 0.01
	maxAdaptiveMaxP = 0.5
	// adaptiveAlpha caps Adaptive RED's additive increase of max_p; the
	// step is min(adaptiveAlpha, max_p/4).
	adaptiveAlpha = 0.01
	// adaptiveBeta is Adaptive RED's multiplicative decrease factor.
	adaptiveBeta = 0.9
)

// Bounds checked by Validate. They keep every derived quantity finite and
// every product in the hot path inside 64 bits (see controller.go).
const (
	maxLimitPackets = 1 << 24                 // storage for the ring is allocated up front
	maxBytes        = min(1<<40, math.MaxInt) // thresholds and byte limits: 1 TiB (less on 32-bit platforms)
	maxMeanBytes    = 1 << 24                 // a mean packet size larger than 16 MiB is a mistake
	minFrameBytes   = 64                      // the smallest Ethernet frame, for default packet limits in byte mode
)

// Config configures a RED queue. The zero Config is plain RED in packet
// mode with ECN marking, the thresholds and weight chosen automatically
// for a 100 Mbit/s link, and a 1000-packet limit. [ConfigForLink] sizes a
// configuration for a given link.
//
// A threshold or limit is in packets, or in bytes when ByteMode is set.
type Config struct {
	// MinThreshold is min_th: below it the average queue causes no early
	// drop or mark. Packets, or bytes in ByteMode. Zero means MaxThreshold/3
	// if MaxThreshold is set, and otherwise the automatic threshold of
	// Floyd, Gummadi and Shenker (2001): max(5 packets, TargetDelay·C/2),
	// where C is the link rate in mean-sized packets per second (times
	// MeanPacketBytes in ByteMode).
	MinThreshold int
	// MaxThreshold is max_th: the average at which the drop probability
	// reaches MaxP. Packets, or bytes in ByteMode. Zero means
	// 3·MinThreshold. It must be greater than MinThreshold.
	MaxThreshold int
	// MaxP is max_p, the early drop probability at MaxThreshold, in (0, 1].
	// Zero means 0.02. With Adaptive it is the initial value and
	// must be in [minAdaptiveMaxP, maxAdaptiveMaxP].
	MaxP float64
	// Weight is w_q, the weight of each arrival in the average queue, in
	// (0, 1]. Zero means the automatic weight of Floyd, Gummadi and Shenker
	// (2001): 1 − exp(−1/C), with C the link rate in mean-sized packets per
	// second, a time constant of about one second.
	Weight float64

	// LinkRate is the rate at which the queue is drained. Zero means
	// 100 mbit; at most 1000 Tbit/s. With MeanPacketBytes it sets
	// the packet time s = 8·MeanPacketBytes/LinkRate that an idle period is
	// measured in, and C = 1/s for the automatic weight and thresholds.
	LinkRate aqm.Rate
	// MeanPacketBytes is the mean packet size in bytes. Zero means
	// 1000. ByteMode scales the drop probability of a
	// packet by Size/MeanPacketBytes.
	MeanPacketBytes int
	// TargetDelay is the queueing delay the automatic thresholds are set
	// for. Zero means 5 ms. It is used only when
	// MinThreshold and MaxThreshold are both zero.
	TargetDelay time.Duration

	// LimitPackets is the hard limit in packets: arrivals that RED accepts
	// are refused with [aqm.DroppedOverlimit] while the queue holds this many.
	// Zero means the larger of 1000 and 2·MaxThreshold (in
	// ByteMode: LimitBytes/64, room for minimum-size frames), at most
	// 131072. Storage for this many packets is allocated
	// by New, so it is at most 1<<24.
	//
	// A limit that holds more than about a second of queue at the link rate
	// defeats the purpose of RED under traffic that does not respond to
	// drops or marks: the queue then sits at the limit, with the delay of a
	// plain FIFO. [ConfigForLink] sizes the limit from the link rate and the
	// round-trip time.
	LimitPackets int
	// LimitBytes is the hard limit in bytes. Zero means none in packet mode
	// and 2·MaxThreshold in ByteMode. A packet larger than LimitBytes is
	// always refused.
	LimitBytes int

	// ByteMode makes the average, the thresholds and the limits count bytes
	// instead of packets, and scales each packet's drop probability by
	// Size/MeanPacketBytes (Floyd and Jacobson 1993, §4), so a large packet
	// is more likely to be dropped than a small one.
	ByteMode bool
	// Gentle replaces the forced drop at MaxThreshold by a linear ramp of
	// the drop probability from MaxP at MaxThreshold to 1 at 2·MaxThreshold
	// (Floyd 2000). Recommended.
	Gentle bool
	// Adaptive turns on Adaptive RED (Floyd, Gummadi and Shenker 2001):
	// every AdaptInterval, max_p is increased by min(0.01, max_p/4) if the
	// average is above 0.6 of the way from MinThreshold to MaxThreshold,
	// or multiplied by 0.9 if it is below 0.4 of the way, within
	// [0.01, 0.5]. Use it with Gentle, as the paper does.
	Adaptive bool
	// AdaptInterval is Adaptive RED's adaptation period. Zero means
	// 500 ms.
	AdaptInterval time.Duration

	// Wait spaces early signals as ns-2's wait_ option and ns-3's
	// RedQueueDisc Wait attribute (true by default there) do: after an
	// early signal RED waits until count·p_b ≥ 1 before it signals again,
	// so that, for a constant p_b, the gap between signals is uniform on
	// about [1/p_b, 2/p_b] arrivals and the long-run signal rate is about
	// 2·p_b/3 (exactly 2·p_b/(3 − p_b) when 1/p_b is an integer) instead of
	// 2·p_b/(1 + p_b). False, the default, keeps Floyd and Jacobson's
	// spacing, uniform on [1, 1/p_b]. See the package documentation for the
	// exact rule.
	Wait bool

	// DisableECN makes the queue drop ECN-capable packets instead of
	// marking them. By default an ECN-capable packet (ECT(0), ECT(1) or CE)
	// that RED selects early is set to CE and queued; Not-ECT packets are
	// always dropped.
	DisableECN bool
	// DisableHardDrop makes the queue mark ECN-capable packets also where
	// RED's signal is forced (average at or above MaxThreshold, or
	// 2·MaxThreshold with Gentle), as Linux's ecn without harddrop does. By
	// default they are dropped there with [aqm.DroppedOverload], so a sender
	// that ignores marks cannot hold the queue above the thresholds.
	DisableHardDrop bool

	// Seed seeds the queue's random source. Zero, the default and the
	// right choice in production, draws a secret seed from crypto/rand, so
	// that no two queues share a random stream and an outsider cannot
	// predict the drops; [Queue.Config] reports the seed drawn. A fixed
	// non-zero Seed makes the queue reproducible, for tests and
	// simulations: two queues with the same Seed and Config make the same
	// decisions on the same packets and times.
	Seed uint64
}

// params are the constants the hot path uses, derived once by Validate.
type params struct {
	byteMode, gentle, adaptive bool
	ecn, hardDrop, wait        bool

	minTh, maxTh float64 // thresholds, packets or bytes
	forcedTh     float64 // maxTh, or 2·maxTh with Gentle: at and above it every packet is signalled
	quietTh      float64 // maxTh in packet mode without Wait, where quietInBand decides below it; else 0
	w, omw       float64 // w_q and 1 − w_q
	maxP         float64 // initial max_p

	limitPackets int
	limitBytes   uint64 // math.MaxUint64 when there is none
	meanBytes    uint64

	// decayPerNs is ln(1−w_q)/s with s the packet time in nanoseconds, so
	// that an idle time of d nanoseconds multiplies the average by
	// exp(d·decayPerNs) = (1−w_q)^(d/s). It is −Inf when w_q is 1.
	decayPerNs float64

	interval       int64   // ARED period, ns
	tgtLo, tgtHi   float64 // ARED target band: minTh + 0.4Δ, minTh + 0.6Δ
	packetTimeSecs float64 // s, seconds (Detail)
}

// Validate checks c and returns nil or one [aqm.ConfigError] per bad
// field, joined with errors.Join; each wraps [aqm.ErrInvalidConfig]. A
// field that is bad on its own is named even when it also takes part in a
// relation with another field; a relation between fields that are each
// valid names the field the rule is about. Validate does not change c:
// [Queue.Config] reports the configuration with every default filled in.
func (c Config) Validate() error {
	_, _, err := c.derive()
	return err
}

func bad(field string, v any, rule string) error {
	return &aqm.ConfigError{Pkg: "red", Field: field, Value: v, Rule: rule}
}

// withDefaults returns c with every zero field that has a default set to
// it, and the relations checked: the effective configuration. Fields that
// are bad on their own must have been reported (and are treated as zero
// here, so that the relations are checked against the defaults).
func (c Config) withDefaults(badField map[string]bool) (Config, []error) {
	var errs []error
	if badField["LinkRate"] {
		c.LinkRate = 0
	}
	if badField["MeanPacketBytes"] {
		c.MeanPacketBytes = 0
	}
	if badField["TargetDelay"] {
		c.TargetDelay = 0
	}
	if badField["AdaptInterval"] {
		c.AdaptInterval = 0
	}
	if badField["MaxP"] {
		c.MaxP = 0
	}
	if badField["Weight"] {
		c.Weight = 0
	}
	if c.LinkRate == 0 {
		c.LinkRate = defaultLinkRate
	}
	if c.MeanPacketBytes == 0 {
		c.MeanPacketBytes = defaultMeanPacketBytes
	}
	if c.TargetDelay == 0 {
		c.TargetDelay = defaultTargetDelay
	}
	if c.AdaptInterval == 0 {
		c.AdaptInterval = defaultAdaptInterval
	}
	if c.MaxP == 0 {
		c.MaxP = defaultMaxP
	}
	pktPerSec := c.packetsPerSecond()
	if c.Weight == 0 {
		// 1 − exp(−1/C), computed without cancellation.
		c.Weight = -math.Expm1(-1 / pktPerSec)
		if c.Weight == 0 { // only for absurd rates; keep it in (0, 1]
			c.Weight = math.SmallestNonzeroFloat64
		}
	}
	thMax := maxLimitPackets
	unit := 1
	if c.ByteMode {
		thMax = maxBytes
		unit = c.MeanPacketBytes
	}
	minBad, maxBad := badField["MinThreshold"], badField["MaxThreshold"]
	if minBad || maxBad {
		// Nothing sensible to relate; fill in for the limit checks only.
		if minBad {
			c.MinThreshold = 0
		}
		if maxBad {
			c.MaxThreshold = 0
		}
	}
	switch {
	case c.MinThreshold == 0 && c.MaxThreshold == 0:
		// max(5, TargetDelay·C/2) packets, and max_th = 3·min_th.
		minPkts := math.Max(5, math.Round(c.TargetDelay.Seconds()*pktPerSec/2))
		minPkts = math.Min(minPkts, float64(thMax/(3*unit)))
		c.MinThreshold = int(minPkts) * unit
		c.MaxThreshold = 3 * c.MinThreshold
	case c.MaxThreshold == 0:
		c.MaxThreshold = min(3*c.MinThreshold, thMax)
	case c.MinThreshold == 0:
		c.MinThreshold = c.MaxThreshold / 3
		if c.MinThreshold == 0 {
			errs = append(errs, bad("MaxThreshold", c.MaxThreshold, "must be at least 3 when MinThreshold is zero"))
		}
	}
	if c.MinThreshold >= c.MaxThreshold && c.MinThreshold > 0 && !minBad && !maxBad {
		errs = append(errs, bad("MaxThreshold", c.MaxThreshold, "must be greater than MinThreshold ("+itoa(c.MinThreshold)+")"))
	}
	// Limits.
	given := c.LimitBytes != 0
	if c.ByteMode {
		switch {
		case badField["LimitBytes"]:
			c.LimitBytes = 2 * c.MaxThreshold
		case c.LimitBytes == 0:
			c.LimitBytes = 2 * c.MaxThreshold
		case c.LimitBytes < c.MaxThreshold && !maxBad:
			errs = append(errs, bad("LimitBytes", c.LimitBytes, "must be at least MaxThreshold ("+itoa(c.MaxThreshold)+")"))
		}
		if c.LimitPackets == 0 {
			c.LimitPackets = min(maxDerivedLimitPackets, max(defaultLimitPackets, (c.LimitBytes+minFrameBytes-1)/minFrameBytes))
		}
		// A byte limit below two mean-size packets refuses most packets
		// before RED sees a queue: only the limit would drop.
		if need := 2 * c.MeanPacketBytes; c.LimitBytes < need && !badField["LimitBytes"] && !maxBad {
			if given {
				errs = append(errs, bad("LimitBytes", c.LimitBytes, "must be at least 2×MeanPacketBytes ("+itoa(need)+") in ByteMode: a smaller byte limit refuses most packets before RED sees a queue"))
			} else {
				errs = append(errs, bad("MaxThreshold", c.MaxThreshold, "must be at least MeanPacketBytes ("+itoa(c.MeanPacketBytes)+") in ByteMode when LimitBytes is zero: the default byte limit, 2·MaxThreshold, would refuse most packets before RED sees a queue"))
			}
		}
	} else if !badField["LimitPackets"] {
		switch {
		case c.LimitPackets == 0:
			c.LimitPackets = max(defaultLimitPackets, 2*c.MaxThreshold)
			if c.LimitPackets > maxDerivedLimitPackets {
				c.LimitPackets = maxDerivedLimitPackets
				if c.MaxThreshold > maxDerivedLimitPackets && !maxBad {
					errs = append(errs, bad("LimitPackets", 0, "must be set explicitly when MaxThreshold ("+
						itoa(c.MaxThreshold)+") is above "+itoa(maxDerivedLimitPackets)+" packets: the default would preallocate more than "+
						itoa(maxDerivedLimitPackets*32>>20)+" MiB"))
				}
			}
		case c.LimitPackets < c.MaxThreshold && !maxBad:
			errs = append(errs, bad("LimitPackets", c.LimitPackets, "must be at least MaxThreshold ("+itoa(c.MaxThreshold)+")"))
		}
	}
	return c, errs
}

// packetsPerSecond is C, the link rate in mean-sized packets per second.
func (c Config) packetsPerSecond() float64 {
	return float64(c.LinkRate) / (8 * float64(c.MeanPacketBytes))
}

// derive checks c, applies the defaults and computes the hot-path
// constants. It returns the effective configuration.
func (c Config) derive() (Config, params, error) {
	var errs []error
	var p params
	badField := map[string]bool{}
	report := func(field string, v any, rule string) {
		errs = append(errs, bad(field, v, rule))
		badField[field] = true
	}

	// Every field on its own.
	if c.LinkRate > maxLinkRate {
		report("LinkRate", c.LinkRate, "must be at most "+maxLinkRate.String())
	}
	if c.MeanPacketBytes < 0 || c.MeanPacketBytes > maxMeanBytes {
		report("MeanPacketBytes", c.MeanPacketBytes, "must be in [0, "+strconv.FormatUint(uint64(maxMeanBytes), 10)+"]")
	}
	if c.TargetDelay < 0 || c.TargetDelay > time.Hour {
		report("TargetDelay", c.TargetDelay, "must be in [0, 1h]")
	}
	if c.AdaptInterval < 0 || (c.AdaptInterval > 0 && c.AdaptInterval < time.Millisecond) || c.AdaptInterval > time.Hour {
		report("AdaptInterval", c.AdaptInterval, "must be zero or in [1ms, 1h]")
	}
	if !(c.Weight >= 0 && c.Weight <= 1) { // also rejects NaN
		report("Weight", c.Weight, "must be in (0, 1]")
	}
	switch {
	case !(c.MaxP >= 0 && c.MaxP <= 1):
		report("MaxP", c.MaxP, "must be in (0, 1]")
	case c.Adaptive && c.MaxP != 0 && (c.MaxP < minAdaptiveMaxP || c.MaxP > maxAdaptiveMaxP):
		report("MaxP", c.MaxP, "must be in [0.01, 0.5] with Adaptive")
	}
	thMax := maxLimitPackets
	if c.ByteMode {
		thMax = maxBytes
	}
	if c.MinThreshold < 0 || c.MinThreshold > thMax {
		report("MinThreshold", c.MinThreshold, "must be in [0, "+itoa(thMax)+"]")
	}
	if c.MaxThreshold < 0 || c.MaxThreshold > thMax {
		report("MaxThreshold", c.MaxThreshold, "must be in [0, "+itoa(thMax)+"]")
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		report("LimitPackets", c.LimitPackets, "must be in [0, "+strconv.FormatUint(uint64(maxLimitPackets), 10)+"]")
	}
	if c.LimitBytes < 0 || c.LimitBytes > maxBytes {
		report("LimitBytes", c.LimitBytes, "must be in [0, "+strconv.FormatUint(uint64(maxBytes), 10)+"]")
	}
	c, rel := c.withDefaults(badField)
	errs = append(errs, rel...)
	if len(errs) > 0 {
		return c, p, errors.Join(errs...)
	}

	p.byteMode, p.gentle, p.adaptive = c.ByteMode, c.Gentle, c.Adaptive
	p.ecn, p.hardDrop, p.wait = !c.DisableECN, !c.DisableHardDrop, c.Wait
	p.minTh, p.maxTh = float64(c.MinThreshold), float64(c.MaxThreshold)
	p.forcedTh = p.maxTh
	if c.Gentle {
		p.forcedTh = 2 * p.maxTh
	}
	if !c.Wait && !c.ByteMode {
		p.quietTh = p.maxTh // the count test is count·p_b ≥ R, inline
	}
	p.w, p.omw = c.Weight, 1-c.Weight
	p.maxP = c.MaxP
	p.limitPackets = c.LimitPackets
	p.limitBytes = math.MaxUint64
	if c.LimitBytes > 0 {
		p.limitBytes = uint64(c.LimitBytes)
	}
	p.meanBytes = uint64(c.MeanPacketBytes)
	p.packetTimeSecs = 1 / c.packetsPerSecond()
	p.decayPerNs = math.Log1p(-p.w) / (p.packetTimeSecs * 1e9)
	p.interval = int64(c.AdaptInterval)
	delta := p.maxTh - p.minTh
	p.tgtLo = p.minTh + 0.4*delta
	p.tgtHi = p.minTh + 0.6*delta
	return c, p, nil
}

// ConfigForLink returns the configuration of a RED queue in packet mode
// for a link of the given rate and flows whose round-trip time is about
// rtt (zero means 100 ms): LinkRate is rate, the thresholds and
// weight are the automatic ones for that rate, and LimitPackets is
// rate.BufferPackets(rtt), four round trips of full-size packets (raised to
// MaxThreshold if the automatic threshold is larger). Everything else is
// at its default; set Gentle, Adaptive or ECN options on the result. A
// zero rate (unknown or unlimited) gives the zero Config: the defaults,
// whose thresholds are those of 100 mbit. A rate above 1000 Tbit/s is
// taken as 1000 Tbit/s.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	rate = min(rate, maxLinkRate)
	c := Config{LinkRate: rate}
	eff, _ := c.withDefaults(nil)
	c.LimitPackets = min(maxLimitPackets, max(rate.BufferPackets(rtt), eff.MaxThreshold))
	return c
}

func itoa(n int) string { return strconv.Itoa(n) }
