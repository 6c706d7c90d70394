package front

import (
	"errors"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// DefaultBurstTime is how much sending time the default burst covers: 2 ms of
// the configured rate. The burst is also what lets a consumer catch up when
// it wakes late: Go timers fire tens of microseconds to about a millisecond
// late on a loaded machine, and credit beyond the burst is lost, so a burst
// shorter than the typical oversleep makes the front send below its rate.
const DefaultBurstTime = 2 * time.Millisecond

// DefaultMinBurstBytes is the smallest default burst: 3028 bytes, two
// full-size Ethernet frames (2 × 1514), so that at low rates a full frame can
// still leave right after another one.
const DefaultMinBurstBytes = 3028

// MaxShards is the largest number of shards of a [Sharded] front.
const MaxShards = 256

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
	// sends in [DefaultBurstTime], at least [DefaultMinBurstBytes]; that
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
	// [Front.OnRefused]. At most [StageLimit] packets wait in the hand-over;
	// a producer that finds it full moves them into the queue itself, so
	// nothing is lost or reordered and the AQM still sees every packet
	// when the consumer is slow or asleep. Fixed when the front is made.
	Staged bool
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join. It does not modify c.
func (c Config) Validate() error {
	var errs []error
	if c.BurstBytes < 0 || c.BurstBytes > MaxBurstBytes {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "BurstBytes", Value: c.BurstBytes, Rule: "must be in [0, 1073741824]"})
	}
	return errors.Join(errs...)
}

// burstBytes returns the effective burst: BurstBytes, or the default derived
// from the rate. The config must be valid.
func (c Config) burstBytes() int {
	if c.BurstBytes > 0 {
		return c.BurstBytes
	}
	return defaultBurst(uint64(c.Rate))
}

// withDefaults returns c with the default burst filled in.
func (c Config) withDefaults() Config {
	c.BurstBytes = c.burstBytes()
	return c
}

// defaultBurst returns max(DefaultMinBurstBytes, rate × DefaultBurstTime / 8
// bits per byte), capped at MaxBurstBytes. The bytes in 2 ms are
// rate / 8 / 500 = rate / 4000, computed by division so that it cannot
// overflow.
func defaultBurst(rate uint64) int {
	const perSecond = uint64(time.Second / DefaultBurstTime) // 500 bursts per second
	b := rate / 8 / perSecond
	if b > MaxBurstBytes {
		b = MaxBurstBytes
	}
	return max(int(b), DefaultMinBurstBytes)
}

// ShardedConfig configures a [Sharded] front.
type ShardedConfig struct {
	// Shards is the number of shards, each with its own queue and lock, in
	// [1, MaxShards]. Zero means runtime.GOMAXPROCS(0), as gVisor's fifo
	// qdisc does; Linux's mq gives one per TX queue.
	Shards int
	// Rate and BurstBytes describe ONE token bucket shared by all shards
	// (see [Sharded] for how the budget is split). Zero Rate: unlimited.
	Config
	// Seed keys the mix that maps a packet's Hash to a shard. Zero (the
	// default, for production) draws a secret key from crypto/rand, so that
	// nobody can aim flows at one shard; a fixed seed is for tests and
	// simulations that must be reproducible.
	Seed uint64
}

// Validate reports every bad field, as [Config.Validate] does.
func (c ShardedConfig) Validate() error {
	var errs []error
	if c.Shards < 0 || c.Shards > MaxShards {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "Shards", Value: c.Shards, Rule: "must be in [0, 256]"})
	}
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
