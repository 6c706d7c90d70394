// Package rng is the deterministic random source embedded in every queue: a
// PCG generator (math/rand/v2) held by value, seeded from the queue's
// configuration. No global state, no locks, no allocation.
package rng

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
)

// Source is a seedable PCG-DXSM generator. The zero Source is valid and
// equal to New(0).
type Source struct {
	pcg rand.PCG
}

// New returns a Source seeded with seed. Two Sources with the same seed
// produce the same stream.
func New(seed uint64) Source {
	var s Source
	s.Seed(seed)
	return s
}

// Seed resets the stream. The second PCG word is a fixed odd constant (the
// 64-bit golden ratio) so that seed alone selects the stream.
func (s *Source) Seed(seed uint64) { s.pcg.Seed(seed, 0x9e3779b97f4a7c15) }

// Uint64 returns a uniformly distributed 64-bit value.
func (s *Source) Uint64() uint64 { return s.pcg.Uint64() }

// Uint32 returns a uniformly distributed 32-bit value: the high half of the
// next 64-bit output.
func (s *Source) Uint32() uint32 { return uint32(s.pcg.Uint64() >> 32) }

// Float64 returns a uniformly distributed value in [0, 1) with 53 bits of
// precision, from the same stream as Uint64 (one draw each).
func (s *Source) Float64() float64 { return float64(s.pcg.Uint64()>>11) / (1 << 53) }

// Random returns a secret, uniformly drawn, non-zero 64-bit value from
// crypto/rand: the key or seed of a queue whose configuration gives none.
func Random() uint64 {
	var b [8]byte
	for {
		_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// SeedOrRandom returns seed if it is not zero, and [Random] otherwise: the
// rule every queue applies to its Config.Seed.
func SeedOrRandom(seed uint64) uint64 {
	if seed != 0 {
		return seed
	}
	return Random()
}
