package proptest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParameters protects the shared gopter set-up: the package's seed by
// default, AQMTEST_SEED to replay another, the run counts given.
func TestParameters(t *testing.T) {
	t.Setenv("AQMTEST_SEED", "")
	p := Parameters(t, 77, 120, 12)
	require.Equal(t, int64(77), p.Seed())
	want := 120
	if testing.Short() {
		want = 12
	}
	require.Equal(t, want, p.MinSuccessfulTests)
	t.Setenv("AQMTEST_SEED", "4242")
	require.Equal(t, int64(4242), Parameters(t, 77, 1, 1).Seed())
	t.Setenv("AQMTEST_SEED", "not-a-number")
	require.Equal(t, int64(77), Parameters(t, 77, 1, 1).Seed())
}
