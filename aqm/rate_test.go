package aqm_test

import (
	"errors"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestParseRate protects tc's rate syntax: units, case, bytes against bits,
// binary prefixes and bare numbers.
func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want aqm.Rate
	}{
		{"100mbit", 100 * aqm.Mbit},
		{"100Mbit", 100 * aqm.Mbit},
		{"1.5gbit", 1500 * aqm.Mbit},
		{"8M bit", 0}, // not a unit: error below
		{"64kbit", 64 * aqm.Kbit},
		{"1000", 1000},
		{"1e3kbit", aqm.Mbit},
		{"12500kbps", 100 * aqm.Mbit},
		{"1bps", 8},
		{"1kibit", 1024},
		{"2mibps", 2 * 8 << 20},
		{" 10gbit ", 10 * aqm.Gbit},
		{"0", 0},
	} {
		got, err := aqm.ParseRate(c.in)
		if c.in == "8M bit" {
			require.ErrorIs(t, err, aqm.ErrInvalidRate, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{"", "mbit", "-1mbit", "1.2.3mbit", "10 furlongs", "nan", "inf", "1e400bit", "99999999999tbit"} {
		_, err := aqm.ParseRate(bad)
		require.ErrorIs(t, err, aqm.ErrInvalidRate, bad)
		require.Contains(t, err.Error(), "rate")
	}
}

// TestRateStringRoundTrip protects printing: tc-style units, and ParseRate
// reads back exactly the Rate that String printed.
func TestRateStringRoundTrip(t *testing.T) {
	require.Equal(t, "100mbit", (100 * aqm.Mbit).String())
	require.Equal(t, "1.5gbit", (1500 * aqm.Mbit).String())
	require.Equal(t, "999bit", aqm.Rate(999).String())
	require.Equal(t, "0bit", aqm.Rate(0).String())
	for _, r := range []aqm.Rate{1, 999, 1000, 1001, 123456789, 8 * aqm.Mbit, 1<<63 + 12345, math.MaxUint64 - 4096} {
		back, err := aqm.ParseRate(r.String())
		require.NoError(t, err, r.String())
		if r < 1<<53 {
			require.Equal(t, r, back, r.String())
		} else { // beyond float64's exact integers: within one part in 2^52
			require.InEpsilon(t, float64(r), float64(back), 1e-15, r.String())
		}
	}
}

// TestRateFlag protects the flag.Value and text forms.
func TestRateFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	r := 8 * aqm.Mbit
	fs.Var(&r, "rate", "link rate")
	require.NoError(t, fs.Parse([]string{"-rate", "1.5gbit"}))
	require.Equal(t, 1500*aqm.Mbit, r)
	err := fs.Parse([]string{"-rate", "fast"})
	require.Error(t, err)
	require.True(t, errors.Is(r.Set("fast"), aqm.ErrInvalidRate))
	txt, err := r.MarshalText()
	require.NoError(t, err)
	var back aqm.Rate
	require.NoError(t, back.UnmarshalText(txt))
	require.Equal(t, r, back)
}

// TestRateTxTimeBytesIn protects the conversions between bytes and time:
// rounding up, the unlimited zero rate, and saturation instead of overflow.
func TestRateTxTimeBytesIn(t *testing.T) {
	require.Equal(t, 120*time.Microsecond, (100 * aqm.Mbit).TxTime(1500))
	require.Equal(t, time.Duration(1), aqm.Gbit.TxTime(0)+1)
	require.Equal(t, time.Duration(3), (3 * aqm.Gbit).TxTime(1)) // 8/3 ns rounds up
	require.Zero(t, aqm.Rate(0).TxTime(1500))
	require.Equal(t, time.Duration(math.MaxInt64), aqm.Rate(1).TxTime(math.MaxInt64))
	require.Equal(t, int64(1500), (100 * aqm.Mbit).BytesIn(120*time.Microsecond))
	require.Equal(t, int64(math.MaxInt64), aqm.Rate(0).BytesIn(time.Second))
	require.Zero(t, aqm.Gbit.BytesIn(-time.Second))
	require.Equal(t, int64(math.MaxInt64), aqm.Rate(math.MaxUint64).BytesIn(math.MaxInt64))
}

// TestRateBuffer protects the presets' sizing rule: four round trips at
// the rate, clamped to [64 KiB, 32 MiB], and its packet count.
func TestRateBuffer(t *testing.T) {
	require.Equal(t, 400000, (8 * aqm.Mbit).BufferBytes(100*time.Millisecond))
	require.Equal(t, 400000, (8 * aqm.Mbit).BufferBytes(0))
	require.Equal(t, (64 << 10), (64 * aqm.Kbit).BufferBytes(20*time.Millisecond))
	require.Equal(t, 32<<20, (10 * aqm.Gbit).BufferBytes(time.Second))
	require.Equal(t, 32<<20, aqm.Rate(0).BufferBytes(time.Second))
	require.Equal(t, 265, (8 * aqm.Mbit).BufferPackets(0))
	require.LessOrEqual(t, (8 * aqm.Mbit).TxTime(int64((8 * aqm.Mbit).BufferBytes(0))), 400*time.Millisecond)
}
