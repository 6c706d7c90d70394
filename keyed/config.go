package front

import (
	"errors"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/bucket"
)

// defaultMaxKeys is the default [KeyedConfig.MaxKeys]: 1024 keys, a VPN's
// peers or a proxy's busy destinations with room to spare.
const defaultMaxKeys = 1024

// maxKeyedKeys is the largest [KeyedConfig.MaxKeys]: 65536 keys. The key
// slots are allocated when the front is made (see [KeyedDetail.MemoryBytes]).
const maxKeyedKeys = 1 << 16

// defaultKeyIdleTime is the default [KeyedConfig.IdleTime]: 1 s, longer than
// any AQM interval (CoDel's 100 ms) and than a default burst's refill time,
// so a key reclaimed after it has lost nothing a fresh queue lacks.
const defaultKeyIdleTime = time.Second

// maxKeyIdleTime is the largest [KeyedConfig.IdleTime]: one hour.
const maxKeyIdleTime = time.Hour

// defaultQuantumBytes is the default [KeyedConfig.QuantumBytes]: 1514 bytes,
// one full-size Ethernet frame, fq_codel's and CAKE's quantum.
const defaultQuantumBytes = 1514

// maxQuantumBytes is the largest [KeyedConfig.QuantumBytes]: 1 MiB.
const maxQuantumBytes = 1 << 20

// KeyedConfig configures a [Keyed] queue. The zero value is valid: up to
// 1024 keys, reclaimed after 1 s empty, served by deficit round robin
// with a 1514-byte quantum, no rate.
//
// KeyRate shapes each key on its own; Rate shapes all keys together, shared
// fairly in bytes between the keys that have packets. Both may be set: each
// key is then held to KeyRate and all of them to Rate.
type KeyedConfig struct {
	// MaxKeys bounds the number of keys that have a queue at once, in [0,
	// 65536]; zero means 1024. A packet for a new key
	// at the bound takes the slot of the key that has been idle (its queue
	// empty) the longest, counted in [KeyedDetail.EvictedKeys]; when every
	// key has packets queued it is refused with [aqm.DroppedOverlimit],
	// counted in [KeyedDetail.RefusedKeyLimit].
	MaxKeys int
	// IdleTime is how long a key's queue must stay empty before the key is
	// reclaimed: its queue is let go, its counters are folded into the
	// totals of [Keyed.Stats], and a later packet for the key builds a new
	// queue. In [0, 1h]; zero means 1 s.
	IdleTime time.Duration
	// QuantumBytes is how many bytes a key may send per round of the
	// deficit round robin that serves the keys with packets, in [0,
	// 1048576]; zero means 1514.
	QuantumBytes int
	// KeyRate is each key's own rate in bits per second of
	// [aqm.Packet.Size]; zero means none.
	KeyRate aqm.Rate
	// KeyBurstBytes is each key's bucket depth, in [0, [MaxBurstBytes]];
	// zero means KeyRate's bytes in [DefaultBurstTime], at least
	// [DefaultMinBurstBytes] (as [Config.BurstBytes]).
	KeyBurstBytes int
	// Rate is the rate shared by all keys, in bits per second; zero means
	// none. Put a Keyed behind a [Front] with no front rate to let the
	// front's consumer sleep until the next departure ([aqm.Paced]).
	Rate aqm.Rate
	// BurstBytes is the shared bucket's depth, in [0, [MaxBurstBytes]];
	// zero means Rate's bytes in [DefaultBurstTime], at least
	// [DefaultMinBurstBytes].
	BurstBytes int
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join. It does not modify c.
func (c KeyedConfig) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: field, Value: v, Rule: rule})
	}
	if c.MaxKeys < 0 || c.MaxKeys > maxKeyedKeys {
		bad("MaxKeys", c.MaxKeys, "must be in [0, "+strconv.Itoa(maxKeyedKeys)+"]")
	}
	if c.IdleTime < 0 || c.IdleTime > maxKeyIdleTime {
		bad("IdleTime", c.IdleTime, "must be in [0, "+maxKeyIdleTime.String()+"]")
	}
	if c.QuantumBytes < 0 || c.QuantumBytes > maxQuantumBytes {
		bad("QuantumBytes", c.QuantumBytes, "must be in [0, "+strconv.Itoa(maxQuantumBytes)+"]")
	}
	if c.KeyBurstBytes < 0 || c.KeyBurstBytes > MaxBurstBytes {
		bad("KeyBurstBytes", c.KeyBurstBytes, "must be in [0, "+strconv.Itoa(MaxBurstBytes)+"]")
	}
	if c.BurstBytes < 0 || c.BurstBytes > MaxBurstBytes {
		bad("BurstBytes", c.BurstBytes, "must be in [0, "+strconv.Itoa(MaxBurstBytes)+"]")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default filled
// in. The config must be valid.
func (c KeyedConfig) withDefaults() KeyedConfig {
	if c.MaxKeys == 0 {
		c.MaxKeys = defaultMaxKeys
	}
	if c.IdleTime == 0 {
		c.IdleTime = defaultKeyIdleTime
	}
	if c.QuantumBytes == 0 {
		c.QuantumBytes = defaultQuantumBytes
	}
	if c.KeyRate > 0 && c.KeyBurstBytes == 0 {
		c.KeyBurstBytes = bucket.DefaultBurst(uint64(c.KeyRate))
	}
	if c.Rate > 0 && c.BurstBytes == 0 {
		c.BurstBytes = bucket.DefaultBurst(uint64(c.Rate))
	}
	return c
}
