package keyed

import (
	"errors"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/bucket"
)

// defaultMaxKeys is the default [Config.MaxKeys]: 1024 keys, a VPN's
// peers or a proxy's busy destinations with room to spare.
const defaultMaxKeys = 1024

// maxKeys is the largest [Config.MaxKeys]: 65536 keys. The key slots are
// allocated when the queue is made (see [Detail.MemoryBytes]).
const maxKeys = 1 << 16

// defaultKeyIdleTime is the default [Config.IdleTime]: 1 s, longer than
// any AQM interval (CoDel's 100 ms) and than a default burst's refill time,
// so a key reclaimed after it has lost nothing a fresh queue lacks.
const defaultKeyIdleTime = time.Second

// maxKeyIdleTime is the largest [Config.IdleTime]: one hour.
const maxKeyIdleTime = time.Hour

// defaultQuantumBytes is the default [Config.QuantumBytes]: 1514 bytes,
// one full-size Ethernet frame, fq_codel's and CAKE's quantum.
const defaultQuantumBytes = 1514

// maxQuantumBytes is the largest [Config.QuantumBytes]: 1 MiB.
const maxQuantumBytes = 1 << 20

// Config configures a [Queue]. The zero value is valid: up to 1024 keys,
// reclaimed after 1 s empty, served by deficit round robin with a
// 1514-byte quantum, no rate.
//
// KeyRate shapes each key on its own; Rate shapes all keys together, shared
// fairly in bytes between the keys that have packets. Both may be set: each
// key is then held to KeyRate and all of them to Rate.
type Config struct {
	// MaxKeys bounds the number of keys that have a queue at once, in [0,
	// 65536]; zero means 1024. A packet for a new key
	// at the bound takes the slot of the key that has been idle (its queue
	// empty) the longest, counted in [Detail.EvictedKeys]; when every
	// key has packets queued it is refused with [aqm.DroppedOverlimit],
	// counted in [Detail.RefusedKeyLimit].
	MaxKeys int
	// IdleTime is how long a key's queue must stay empty before the key is
	// reclaimed: its queue is let go, its counters are folded into the
	// totals of [Queue.Stats], and a later packet for the key builds a new
	// queue. In [0, 1h]; zero means 1 s.
	IdleTime time.Duration
	// QuantumBytes is how many bytes a key may send per round of the
	// deficit round robin that serves the keys with packets, in [0,
	// 1048576]; zero means 1514.
	QuantumBytes int
	// KeyRate is each key's own rate in bits per second of
	// [aqm.Packet.Size]; zero means none.
	KeyRate aqm.Rate
	// KeyBurstBytes is each key's bucket depth, in [0, 1 GiB]; zero means
	// KeyRate's bytes in 5 ms, at least 3028 (two 1514-byte frames), as a
	// front's burst.
	KeyBurstBytes int
	// Rate is the rate shared by all keys, in bits per second; zero means
	// none. Put the queue behind a front with no front rate to let the
	// front's consumer sleep until the next departure ([aqm.Paced]).
	Rate aqm.Rate
	// BurstBytes is the shared bucket's depth, in [0, 1 GiB]; zero means
	// Rate's bytes in 5 ms, at least 3028.
	BurstBytes int
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join. It does not modify c.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "keyed", Field: field, Value: v, Rule: rule})
	}
	if c.MaxKeys < 0 || c.MaxKeys > maxKeys {
		bad("MaxKeys", c.MaxKeys, "must be in [0, "+strconv.Itoa(maxKeys)+"]")
	}
	if c.IdleTime < 0 || c.IdleTime > maxKeyIdleTime {
		bad("IdleTime", c.IdleTime, "must be in [0, "+maxKeyIdleTime.String()+"]")
	}
	if c.QuantumBytes < 0 || c.QuantumBytes > maxQuantumBytes {
		bad("QuantumBytes", c.QuantumBytes, "must be in [0, "+strconv.Itoa(maxQuantumBytes)+"]")
	}
	if c.KeyBurstBytes < 0 || c.KeyBurstBytes > bucket.MaxBytes {
		bad("KeyBurstBytes", c.KeyBurstBytes, "must be in [0, "+strconv.Itoa(bucket.MaxBytes)+"]")
	}
	if c.BurstBytes < 0 || c.BurstBytes > bucket.MaxBytes {
		bad("BurstBytes", c.BurstBytes, "must be in [0, "+strconv.Itoa(bucket.MaxBytes)+"]")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default filled
// in. The config must be valid.
func (c Config) withDefaults() Config {
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
