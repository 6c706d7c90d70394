package sfq

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Defaults of [Config], the values Linux sch_sfq uses when tc leaves a
// parameter out.
const (
	// defaultLimitPackets is the whole queue's packet limit: 127, Linux's
	// SFQ_MAX_DEPTH, which tc prints as "limit 127p".
	defaultLimitPackets = 127
	// defaultDepthPackets is the per-flow packet limit: 127, Linux's
	// default and maximum "depth".
	defaultDepthPackets = 127
	// defaultDivisor is the number of hash buckets: 1024, Linux's
	// SFQ_DEFAULT_HASH_DIVISOR.
	defaultDivisor = 1024
	// defaultQuantumBytes is the round-robin quantum: 1514 bytes, Linux's
	// psched_mtu for Ethernet (a 1500-byte MTU plus the 14-byte link header).
	defaultQuantumBytes = 1514
)

// Upper bounds checked by [Config]; storage proportional to them is
// allocated by [New].
const (
	maxLimitPackets = 1 << 24 // as fifo.Queue: 16 Mi packets, 640 MiB of nodes for 8-byte payloads
	maxDivisor      = 1 << 20 // 4 MiB of bucket table
	maxQuantum      = math.MaxUint32
)

// Config configures a [Queue]. The zero value is Linux's default SFQ
// ("limit 127p depth 127 divisor 1024 quantum 1514b", no perturbation,
// tail drop) with a secret random hash key. [ConfigForLink] sizes the
// limits for a link instead.
type Config struct {
	// LimitPackets is the most packets the whole queue holds. Zero means
	// 127 (127). It must be in [1, 16777216]. SFQ has
	// no AQM, so this limit is what bounds the queueing delay: 127 full-size
	// packets are 1.5 ms at 1 Gbit/s and 15 ms at 100 Mbit/s. Raise it for
	// faster links or many concurrently active flows, but a limit that
	// holds more than a second of queue at the link rate defeats the
	// scheduler's purpose under unresponsive traffic: every flow then waits
	// that long. [ConfigForLink] sizes it for a rate and round-trip time.
	LimitPackets int
	// LimitBytes is the most bytes (sum of Size) the queue holds. Zero means
	// no byte limit. A packet larger than LimitBytes is always refused. It
	// must not be negative.
	LimitBytes int
	// DepthPackets is the most packets one flow (one hash bucket) may hold;
	// an arrival to a flow already at this depth is refused, or with
	// HeadDrop replaces that flow's oldest packet. Zero means
	// 127 (127). It must not be negative; values above
	// LimitPackets have no effect.
	DepthPackets int
	// Divisor is the number of hash buckets packets are classified into.
	// Zero means 1024 (1024). It must be in [0, 1048576]; it
	// need not be a power of two.
	Divisor int
	// QuantumBytes is the round-robin quantum in bytes: the credit (allot)
	// a flow receives per round. Zero means 1514 (1514).
	// It must be in [0, 4294967295]. Quanta smaller than the packets are
	// allowed (the scheduler then skips flows for several rounds in one
	// step), but a quantum of at least the MTU gives the usual
	// one-turn-per-round behaviour.
	QuantumBytes int
	// PerturbPeriod is how often the hash key is replaced, so that flows
	// that collide in a bucket do not stay together. Zero (the default, as
	// in Linux) never replaces the key. It must not be negative. The check
	// is made lazily on Enqueue from its now argument; a re-key with packets
	// queued moves every queued packet (O(Len) once per period, no
	// allocation, no drop, no reordering within a flow).
	PerturbPeriod time.Duration
	// HeadDrop makes the overflow and depth drops take the oldest packet of
	// the chosen flow instead of the newest (Linux "headdrop"), which gives
	// the flow's sender an earlier congestion signal.
	HeadDrop bool
	// Seed seeds the random source that draws the hash keys. Zero (the
	// default, and the right choice in production) draws a secret seed from
	// crypto/rand, so that no one can precompute flows that collide in
	// your queue; [Queue.Config] reports the seed drawn. A fixed non-zero
	// seed gives the same keys, hence the same decisions on the same trace:
	// use one for tests and simulations only, since anyone who knows it
	// knows the keys as well.
	Seed uint64
}

// ConfigForLink returns the configuration of an SFQ draining a link of
// the given rate for flows whose round-trip time is about rtt (zero means
// 100 ms): the packet and byte limits hold [aqm.Rate.BufferBytes]
// (four round trips at the rate, between 64 KiB and 32 MiB), and every other
// field keeps its default. SFQ has no AQM, so this buffer is the most delay
// an unresponsive flow can build. A zero rate (unknown or unlimited) gives
// the zero Config: the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		LimitPackets: rate.BufferPackets(rtt),
		LimitBytes:   rate.BufferBytes(rtt),
	}
}

// Validate reports every bad field of c, one [aqm.ConfigError] each, joined
// with errors.Join; each wraps [aqm.ErrInvalidConfig]. Zero fields take
// their defaults and are valid. It does not modify c.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "sfq", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be in [0, "+strconv.FormatUint(uint64(maxLimitPackets), 10)+"] (0 means 127)")
	}
	if c.LimitBytes < 0 {
		bad("LimitBytes", c.LimitBytes, "must not be negative")
	}
	if c.DepthPackets < 0 {
		bad("DepthPackets", c.DepthPackets, "must not be negative (0 means 127)")
	}
	if c.Divisor < 0 || c.Divisor > maxDivisor {
		bad("Divisor", c.Divisor, "must be in [0, "+strconv.FormatUint(uint64(maxDivisor), 10)+"] (0 means 1024)")
	}
	if c.QuantumBytes < 0 || int64(c.QuantumBytes) > maxQuantum {
		bad("QuantumBytes", c.QuantumBytes, "must be in [0, "+strconv.FormatUint(uint64(maxQuantum), 10)+"] (0 means 1514)")
	}
	if c.PerturbPeriod < 0 {
		bad("PerturbPeriod", c.PerturbPeriod, "must not be negative (0 means never)")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default replaced
// by it (Seed is left alone).
func (c Config) withDefaults() Config {
	if c.LimitPackets == 0 {
		c.LimitPackets = defaultLimitPackets
	}
	if c.DepthPackets == 0 {
		c.DepthPackets = defaultDepthPackets
	}
	if c.Divisor == 0 {
		c.Divisor = defaultDivisor
	}
	if c.QuantumBytes == 0 {
		c.QuantumBytes = defaultQuantumBytes
	}
	return c
}

// params are the validated constants the hot path reads.
type params struct {
	limit      int    // packets
	limitBytes int    // 0: none
	depth      uint32 // per-flow packets
	divisor    uint32
	quantum    int64 // bytes
	period     time.Duration
	headDrop   bool
}

func makeParams(c Config) params {
	return params{
		limit:      c.LimitPackets,
		limitBytes: c.LimitBytes,
		depth:      uint32(min(uint64(c.DepthPackets), math.MaxUint32)),
		divisor:    uint32(c.Divisor),
		quantum:    int64(c.QuantumBytes),
		period:     c.PerturbPeriod,
		headDrop:   c.HeadDrop,
	}
}
