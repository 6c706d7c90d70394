// Package proptest holds the gopter set-up shared by the property tests of
// every package in aqmkit, so that one environment variable replays any of
// them and gopter stays out of the public API.
package proptest

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/seedenv"
	"github.com/leanovate/gopter"
)

// Seed returns the seed that AQMTEST_SEED names: def when it is unset or not
// a number, a fresh one when it is "random".
func Seed(def int64) int64 { return seedenv.Seed(def) }

// Parameters returns gopter parameters for a package's properties: seed (or
// the one AQMTEST_SEED names), logged so that a failure replays, and full
// successful cases, or short under -short.
func Parameters(t testing.TB, seed int64, full, short int) *gopter.TestParameters {
	t.Helper()
	seed = Seed(seed)
	t.Logf("gopter seed %d (replay with AQMTEST_SEED=%d)", seed, seed)
	p := gopter.DefaultTestParametersWithSeed(seed)
	p.MinSuccessfulTests = full
	if testing.Short() {
		p.MinSuccessfulTests = short
	}
	return p
}
