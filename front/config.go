package front

import (
	"errors"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/bucket"
)

// DefaultMinBurstBytes is the smallest default burst: 3028 bytes, two
// full-size Ethernet frames (2 × 1514), so that at low rates a full frame can
// still leave right after another one.
const DefaultMinBurstBytes = bucket.DefaultMinBytes

// MaxBurstBytes is the largest BurstBytes: 1 GiB, so that the bucket's
// credit, kept exactly in units of 1e-9 bit, fits an int64.
const MaxBurstBytes = bucket.MaxBytes

// maxShards is the largest number of shards of a [Sharded] front.
const maxShards = 256

// defaultWakeSlack is the least default [Config.WakeSlack]: 1 ms.
const defaultWakeSlack = time.Millisecond

// maxWakeSlack is the largest [Config.WakeSlack]: 100 ms, already far more
// delay than a queue should add on purpose.
const maxWakeSlack = 100 * time.Millisecond

// wakeFrameBytes is the full-size frame (1514 bytes, an Ethernet frame
// without FCS) whose time at the rate the default wake slack covers.
const wakeFrameBytes = DefaultMinBurstBytes / 2

// Config configures a [Front]: the rate at which it releases packets, and
// whether producers hand packets over to the consumer ([Config.Staged]).
//
// The zero Config releases every queued packet as soon as the consumer asks:
// no shaping. Set Rate a little below the real bottleneck (sqm-scripts and
// CAKE use about 90–95%) so that the queue forms here, where the AQM manages
// it, and not in a device or socket buffer downstream.
type Config struct {
	// Rate is the rate at which packets leave, in bits per second of
	// [aqm.Packet.Size] (count any per-packet framing overhead in Size).
	// Zero means unlimited, the convention of CAKE's "unlimited" and of tc
	// rate 0.
	Rate aqm.Rate
	// BurstBytes is the token bucket's depth: how many bytes may leave back
	// to back after an idle period, on top of the one packet that may always
	// start when the bucket is not in debt. Zero means the bytes the rate
	// sends in 5 ms, at least [DefaultMinBurstBytes]; that
	// default follows the rate when it changes. It must be at most
	// [MaxBurstBytes] (1 GiB).
	BurstBytes int
	// Staged moves the queue's work to the consumer. Producers then only
	// hand their packets over (one short lock and a copy per call) and
	// get [aqm.Enqueued] for each; the consumer moves them into the queue,
	// at the instant each call arrived, before each look at it. The AQM's
	// state then stays in the consumer's core cache instead of moving
	// between cores with every batch, which is what makes a fair queue
	// behind a front cost about what it costs on one thread. The price: a
	// producer no longer learns the queue's verdict. Packets the queue
	// refuses are counted in its Stats and handed to the function set with
	// [Front.OnRefused]. At most 256 packets wait in the hand-over;
	// a producer that finds it full moves them into the queue itself, so
	// nothing is lost or reordered and the AQM still sees every packet
	// when the consumer is slow or asleep. Fixed when the front is made.
	Staged bool
	// WakeSlack is how much later than the next departure a blocking
	// consumer ([Front.DequeueBatch], [Front.Run]) may sleep, so that each
	// wake-up sends a batch instead of a packet or two: the credit earned
	// meanwhile lets the packets that became due leave together. Zero
	// means the default: the larger of 1 ms and one 1514-byte frame's time
	// at the rate; behind a queue that paces itself ([aqm.Paced]) with no
	// front rate, 1 ms. With a rate the slack is cut to half the burst's
	// time at the rate and to the time of the burst less one frame (none
	// for a burst below a frame), so that the credit it earns stays well
	// inside the bucket and the long-run rate is kept even when the timer
	// fires late: the default burst gives 1 ms from 12 Mbit/s up, one
	// frame's time below (12 ms at 1 Mbit/s). It must be in [0, 100ms];
	// set 1 ns for wake-ups at the exact departure instant. The price is
	// delay: a packet may leave up to the slack later than the rate
	// allows, and it waits in the queue, where the AQM counts it.
	// [Front.TryDequeueBatch] always reports the exact wait.
	WakeSlack time.Duration
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join. It does not modify c.
func (c Config) Validate() error {
	var errs []error
	if c.BurstBytes < 0 || c.BurstBytes > MaxBurstBytes {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "BurstBytes", Value: c.BurstBytes, Rule: "must be in [0, 1073741824]"})
	}
	if c.WakeSlack < 0 || c.WakeSlack > maxWakeSlack {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "WakeSlack", Value: c.WakeSlack, Rule: "must be in [0, " + maxWakeSlack.String() + "]"})
	}
	return errors.Join(errs...)
}

// wakeSlack returns the effective wake slack for a bucket of the given
// rate (bits/s; zero: no front rate) and capacity (credit units). The
// config must be valid.
func (c Config) wakeSlack(rate uint64, capacity int64) time.Duration {
	s := c.WakeSlack
	if rate == 0 {
		if s == 0 {
			s = defaultWakeSlack
		}
		return s
	}
	if s == 0 {
		// A frame's time: 1514 × 8 bits × 1e9 ns/s / rate, in units of
		// 1e-9 bit (one unit per ns at 1 bit/s).
		s = max(defaultWakeSlack, time.Duration(bucket.CeilDiv(wakeFrameBytes*bucket.UnitsPerByte, rate)))
	}
	// The credit earned in the slack must leave room in the bucket for a
	// timer that fires late: at most half the burst, and at most the burst
	// less one frame. capacity / rate is a time in ns (capacity ≤ 8.6e18,
	// so the quotient fits).
	room := min(capacity/2, capacity-wakeFrameBytes*bucket.UnitsPerByte)
	if room <= 0 {
		return 0
	}
	return min(s, time.Duration(uint64(room)/rate))
}

// burstBytes returns the effective burst: BurstBytes, or the default derived
// from the rate. The config must be valid.
func (c Config) burstBytes() int {
	if c.BurstBytes > 0 {
		return c.BurstBytes
	}
	return bucket.DefaultBurst(uint64(c.Rate))
}

// withDefaults returns c with the default burst filled in.
func (c Config) withDefaults() Config {
	c.BurstBytes = c.burstBytes()
	return c
}

// ShardedConfig configures a [Sharded] front.
type ShardedConfig struct {
	// Shards is the number of shards, each with its own queue and lock, in
	// [1, 256]. Zero means runtime.GOMAXPROCS(0), as gVisor's fifo
	// qdisc does; Linux's mq gives one per TX queue.
	Shards int
	// Rate and BurstBytes describe ONE token bucket shared by all shards
	// (see [Sharded] for how the budget is split). Zero Rate: unlimited.
	Config
	// SplitRate gives each shard a bucket of its own at a share of Rate,
	// the shares following the shards' demand (see [Sharded], Split
	// rate), instead of one bucket all shards take from under one lock.
	// Fixed when the front is made.
	SplitRate bool
	// SplitPeriod is how often the shares of a split rate are
	// recomputed, in [0, 100ms], at least 100µs when
	// set; zero means 2 ms.
	SplitPeriod time.Duration
	// Seed keys the mix that maps a packet's Hash to a shard. Zero (the
	// default, for production) draws a secret key from crypto/rand, so that
	// nobody can aim flows at one shard; a fixed seed is for tests and
	// simulations that must be reproducible.
	Seed uint64
}

// Validate reports every bad field, as [Config.Validate] does.
func (c ShardedConfig) Validate() error {
	var errs []error
	if c.Shards < 0 || c.Shards > maxShards {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "Shards", Value: c.Shards, Rule: "must be in [0, 256]"})
	}
	if c.SplitPeriod != 0 && (c.SplitPeriod < minSplitPeriod || c.SplitPeriod > maxSplitPeriod) {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "SplitPeriod", Value: c.SplitPeriod, Rule: "must be 0 or in [" + minSplitPeriod.String() + ", " + maxSplitPeriod.String() + "]"})
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
