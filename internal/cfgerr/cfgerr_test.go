package cfgerr

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestRelabel protects the renaming of embedded settings' errors: every
// ConfigError of a joined (and nested) error is named under the new
// package, in order, the originals are untouched, other errors pass
// through, and nil stays nil.
func TestRelabel(t *testing.T) {
	a := &aqm.ConfigError{Pkg: "codel", Field: "Target", Value: -1, Rule: "must not be negative"}
	b := &aqm.ConfigError{Pkg: "codel", Field: "Interval", Value: -1, Rule: "must not be negative"}
	other := errors.New("other")
	got := Relabel("fq", errors.Join(a, errors.Join(b, other)))
	require.Len(t, got, 3)
	for i, field := range []string{"Target", "Interval"} {
		var ce *aqm.ConfigError
		require.ErrorAs(t, got[i], &ce)
		require.Equal(t, "fq", ce.Pkg)
		require.Equal(t, field, ce.Field)
		require.ErrorIs(t, got[i], aqm.ErrInvalidConfig)
	}
	require.Equal(t, "fq: Target (-1) must not be negative", got[0].Error())
	require.Same(t, other, got[2])
	require.Equal(t, "codel", a.Pkg, "the original is not changed")
	require.Nil(t, Relabel("fq", nil))
	require.Len(t, Relabel("fq", a), 1)
}
