package rng

// Small is a 4-byte random stream for state kept once per flow, where a
// 16-byte [Source] would push a flow record past its cache line: a 32-bit
// PCG with the RXS-M-XS output permutation (O'Neill, "PCG: A Family of
// Simple Fast Space-Efficient Statistically Good Algorithms", 2014). Its
// period is 2^32 and it returns every 32-bit value once per period, which
// suits a Bernoulli draw against a 2^32-scaled probability; it is not for
// keys or long simulations of one stream. The zero Small is valid and
// differs from a seeded one only in where it starts.
type Small struct{ state uint32 }

// Seed resets the stream to a start chosen by all 64 bits of seed.
func (s *Small) Seed(seed uint64) {
	// SplitMix64's finaliser spreads every bit of seed over the top half.
	seed = (seed ^ seed>>30) * 0xbf58476d1ce4e5b9
	seed = (seed ^ seed>>27) * 0x94d049bb133111eb
	s.state = uint32((seed ^ seed>>31) >> 32)
}

// Uint32 returns the next value of the stream.
func (s *Small) Uint32() uint32 {
	x := s.state
	s.state = x*747796405 + 2891336453 // the 32-bit LCG step PCG uses
	x = (x>>(x>>28+4) ^ x) * 277803737
	return x>>22 ^ x
}
