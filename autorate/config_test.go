package autorate

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestDefaults protects the documented defaults: the zero Config is
// cake-autorate's download configuration, filled in by Config().
func TestDefaults(t *testing.T) {
	c, err := New(Config{})
	require.NoError(t, err)
	got := c.Config()
	require.Equal(t, Config{
		MinRate: 5 * aqm.Mbit, BaseRate: 20 * aqm.Mbit, MaxRate: 80 * aqm.Mbit,
		DelayThreshold: 30 * ms, FullIncreaseBelow: 10 * ms, FullCutAbove: 60 * ms,
		DetectionWindow: 6, DetectionThreshold: 3,
		BaselineRise: 0.001, BaselineFall: 0.9, DeltaAlpha: 0.095,
		MinCut: 0.01, MaxCut: 0.25, MaxIncrease: 0.04, DecayStep: 0.01, HighLoad: 0.75,
		CutRefractory: 300 * ms, IncreaseRefractory: 200 * ms, DecayRefractory: time.Second,
		PacketBytes: 1500, Reflectors: 8,
		ResponseDeadline: time.Second, HealthInterval: time.Second, OffenceWindow: 60, OffenceThreshold: 3,
		ComparisonInterval: time.Minute, BaselineSpread: 20 * ms, DeltaSpread: 10 * ms,
		RestTime: time.Minute, ProbeTimeout: 10 * time.Second,
	}, got)
	require.Equal(t, 20*aqm.Mbit, c.Rate())
	// The effective config validates and is its own fixed point.
	require.NoError(t, got.Validate())
	require.Equal(t, got, got.withDefaults())
}

// TestPartialRates protects rates given in part: the defaults of the others
// keep the three in order rather than making the config invalid.
func TestPartialRates(t *testing.T) {
	for _, tc := range []struct {
		in           Config
		lo, base, hi aqm.Rate
		name         string
	}{
		{Config{MaxRate: 10 * aqm.Mbit}, 5 * aqm.Mbit, 10 * aqm.Mbit, 10 * aqm.Mbit, "max below base"},
		{Config{MaxRate: 2 * aqm.Mbit}, 2 * aqm.Mbit, 2 * aqm.Mbit, 2 * aqm.Mbit, "max below min"},
		{Config{MinRate: 100 * aqm.Mbit}, 100 * aqm.Mbit, 100 * aqm.Mbit, 100 * aqm.Mbit, "min above base"},
		{Config{BaseRate: aqm.Mbit}, aqm.Mbit, aqm.Mbit, 80 * aqm.Mbit, "base below min"},
		{Config{BaseRate: aqm.Gbit}, 5 * aqm.Mbit, aqm.Gbit, aqm.Gbit, "base above max"},
		{Config{MinRate: aqm.Mbit, MaxRate: 8 * aqm.Mbit}, aqm.Mbit, 8 * aqm.Mbit, 8 * aqm.Mbit, "min and max"},
	} {
		require.NoError(t, tc.in.Validate(), tc.name)
		d := tc.in.withDefaults()
		require.Equal(t, [3]aqm.Rate{tc.lo, tc.base, tc.hi}, [3]aqm.Rate{d.MinRate, d.BaseRate, d.MaxRate}, tc.name)
	}
}

// TestValidateNamesFields protects validation: every bad field is reported
// by name as an *aqm.ConfigError wrapping aqm.ErrInvalidConfig, a field
// bad on its own is reported beside a failing relation, and New refuses.
func TestValidateNamesFields(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		fields []string
	}{
		{Config{MinRate: 30 * aqm.Mbit, BaseRate: 20 * aqm.Mbit, MaxRate: 80 * aqm.Mbit}, []string{"BaseRate"}},
		{Config{MaxRate: 20 * aqm.Tbit}, []string{"MaxRate"}},
		{Config{DelayThreshold: -ms}, []string{"DelayThreshold"}},
		{Config{DelayThreshold: 5 * ms}, []string{"FullIncreaseBelow"}},
		{Config{DelayThreshold: 70 * ms}, []string{"FullCutAbove"}},
		{Config{DetectionWindow: 65}, []string{"DetectionWindow"}},
		{Config{DetectionWindow: 4, DetectionThreshold: 5}, []string{"DetectionThreshold"}},
		{Config{DetectionWindow: -1, DetectionThreshold: -1}, []string{"DetectionWindow", "DetectionThreshold"}},
		{Config{BaselineRise: 1.5, BaselineFall: math.NaN(), DeltaAlpha: -0.1}, []string{"BaselineRise", "BaselineFall", "DeltaAlpha"}},
		{Config{MinCut: 0.3, MaxCut: 0.2}, []string{"MaxCut"}},
		{Config{MinCut: 1, MaxCut: math.Inf(1)}, []string{"MinCut", "MaxCut"}},
		{Config{MinIncrease: 0.1, MaxIncrease: 0.05}, []string{"MaxIncrease"}},
		{Config{MinIncrease: -1}, []string{"MinIncrease"}},
		{Config{AchievedCut: 1}, []string{"AchievedCut"}},
		{Config{AchievedCut: -0.1, MinCut: math.NaN()}, []string{"MinCut", "AchievedCut"}},
		{Config{DecayStep: 1, HighLoad: 2}, []string{"DecayStep", "HighLoad"}},
		{Config{CutRefractory: 2 * time.Hour, IncreaseRefractory: -1, DecayRefractory: -1}, []string{"CutRefractory", "IncreaseRefractory", "DecayRefractory"}},
		{Config{PacketBytes: 70000, Reflectors: 300}, []string{"PacketBytes", "Reflectors"}},
		{Config{OffenceWindow: 70, OffenceThreshold: 80}, []string{"OffenceWindow"}},
		{Config{OffenceWindow: 10, OffenceThreshold: 11}, []string{"OffenceThreshold"}},
		{Config{ResponseDeadline: -1, HealthInterval: -1, ComparisonInterval: -1, BaselineSpread: -1, DeltaSpread: -1, RestTime: -1, ProbeTimeout: -1},
			[]string{"ResponseDeadline", "HealthInterval", "ComparisonInterval", "BaselineSpread", "DeltaSpread", "RestTime", "ProbeTimeout"}},
	} {
		before := tc.cfg
		err := tc.cfg.Validate()
		require.Error(t, err, "%+v", tc.cfg)
		require.ErrorIs(t, err, aqm.ErrInvalidConfig)
		var got []string
		for _, e := range unjoin(err) {
			var ce *aqm.ConfigError
			require.True(t, errors.As(e, &ce), "%v", e)
			require.Equal(t, "autorate", ce.Pkg)
			got = append(got, ce.Field)
		}
		require.Equal(t, tc.fields, got, "%v", err)
		_, err = New(tc.cfg)
		require.Error(t, err)
		require.Equal(t, before.MaxCut, tc.cfg.MaxCut) // NaN-free fields: Validate did not write
	}
	require.EqualError(t, Config{DelayThreshold: 5 * ms}.Validate(), "autorate: FullIncreaseBelow (10ms) must be less than DelayThreshold (5ms)")
	require.EqualError(t, Config{AchievedCut: 1}.Validate(), "autorate: AchievedCut (1) must be in [0, 1)")
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
