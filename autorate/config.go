package autorate

import (
	"errors"
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Defaults of [Config]. The rates are cake-autorate's download defaults;
// the delays, windows, factors and periods are its defaults too, with each
// multiplier written as the fraction it takes off or adds (0.99 is a cut of
// 0.01).
const (
	defaultMinRate  = 5 * aqm.Mbit
	defaultBaseRate = 20 * aqm.Mbit
	defaultMaxRate  = 80 * aqm.Mbit

	defaultDelayThreshold    = 30 * time.Millisecond
	defaultFullIncreaseBelow = 10 * time.Millisecond
	defaultFullCutAbove      = 60 * time.Millisecond

	defaultDetectionWindow    = 6
	defaultDetectionThreshold = 3

	defaultBaselineRise = 0.001
	defaultBaselineFall = 0.9
	defaultDeltaAlpha   = 0.095

	defaultMinCut = 0.01
	defaultMaxCut = 0.25
	// DefaultAchievedCut is the factor cake-autorate up to v3.0 applied
	// to the achieved rate on bufferbloat (achieved_rate_adjust_down_bufferbloat);
	// the zero Config leaves it off, as cake-autorate since v3.1 does.
	DefaultAchievedCut = 0.9
	defaultMaxIncrease = 0.04
	defaultDecayStep   = 0.01
	defaultHighLoad    = 0.75

	defaultCutRefractory      = 300 * time.Millisecond
	defaultIncreaseRefractory = 200 * time.Millisecond
	defaultDecayRefractory    = time.Second

	defaultPacketBytes = 1500
	defaultReflectors  = 8

	defaultResponseDeadline   = time.Second
	defaultHealthInterval     = time.Second
	defaultOffenceWindow      = 60
	defaultOffenceThreshold   = 3
	defaultComparisonInterval = time.Minute
	defaultBaselineSpread     = 20 * time.Millisecond
	defaultDeltaSpread        = 10 * time.Millisecond
	defaultRestTime           = time.Minute
	defaultProbeTimeout       = 10 * time.Second
)

// Limits of [Config] that Validate enforces; the field docs state them.
const (
	// maxRateLimit is the largest rate a Config accepts: 10 Tbit/s.
	maxRateLimit = 10 * aqm.Tbit
	// maxWindow is the largest DetectionWindow and OffenceWindow: 64.
	maxWindow = 64
	// maxReflectors is the largest Reflectors: 256.
	maxReflectors = 256
	// maxSpan bounds every duration of a Config: one hour.
	maxSpan = time.Hour
)

// Config configures a [Controller]. A zero field means the default its doc
// states, and [Controller.Config] reports the values in effect; set a
// duration to 1 ns for "none". See the package documentation for what each
// field does and where its default comes from.
type Config struct {
	// MinRate, BaseRate and MaxRate bound the rate: it never leaves
	// [MinRate, MaxRate], it starts at BaseRate, decays back towards it
	// when the load is low, and falls back to it when probes stop. They
	// must satisfy 0 < MinRate ≤ BaseRate ≤ MaxRate ≤ 10 Tbit/s. Defaults
	// 5, 20 and 80 Mbit/s.
	MinRate, BaseRate, MaxRate aqm.Rate

	// DelayThreshold is how far a sample's delay must rise above its
	// reflector's baseline to count as delayed. Default 30 ms.
	DelayThreshold time.Duration
	// FullIncreaseBelow is the average delay rise at or below which an
	// increase is the full MaxIncrease; between it and DelayThreshold the
	// increase shrinks linearly to MinIncrease. Default 10 ms; it must be
	// below DelayThreshold.
	FullIncreaseBelow time.Duration
	// FullCutAbove is the average delay rise at or above which a cut is
	// the full MaxCut; between DelayThreshold and it the cut grows
	// linearly from MinCut. Default 60 ms; it must be above
	// DelayThreshold.
	FullCutAbove time.Duration

	// DetectionWindow is the number of recent samples (from all active
	// reflectors) bufferbloat is judged on, in [1, 64]; default 6.
	DetectionWindow int
	// DetectionThreshold is how many of them must be delayed for
	// bufferbloat, in [1, DetectionWindow]; default 3.
	DetectionThreshold int

	// BaselineRise and BaselineFall are the EWMA weights of a reflector's
	// baseline for a sample above and below it, in (0, 1]: it rises slowly
	// (default 0.001) and falls fast (default 0.9).
	BaselineRise, BaselineFall float64
	// DeltaAlpha is the EWMA weight of a reflector's average delay rise,
	// kept while the load is not high and used to compare reflectors, in
	// (0, 1]; default 0.095.
	DeltaAlpha float64

	// MinCut and MaxCut are the fractions a cut takes off the rate at the
	// two ends of its scale, 0 < MinCut ≤ MaxCut < 1; defaults 0.01 and
	// 0.25 (cake-autorate's factors 0.99 and 0.75).
	MinCut, MaxCut float64
	// AchievedCut, when set, lets a cut go straight to AchievedCut times
	// the last achieved rate: the new rate is the lower of that and the
	// scaled cut, unless that is at or below MinRate (then the scaled cut
	// alone). When the upstream capacity falls, the achieved rate falls
	// with it within a round trip (the senders are clocked by the
	// bottleneck), so one cut lands near the new capacity instead of
	// several MaxCut steps a CutRefractory apart. In [0, 1); zero (the
	// default) leaves cuts to the scale alone, as cake-autorate since
	// v3.1 does; [DefaultAchievedCut] (0.9) is the factor of its earlier
	// versions.
	AchievedCut float64
	// Recovery, when set, lets an increase after a cut close that share
	// of the gap to the rate the first cut of the episode started from
	// (scaled, as the increase is, by how far the delay is below
	// DelayThreshold), when that is more than the scaled increase. In
	// [0, 1]; zero (the default) leaves increases to the scale alone, as
	// cake-autorate does.
	Recovery float64
	// MinIncrease and MaxIncrease are the fractions an increase adds at the
	// two ends of its scale, 0 ≤ MinIncrease ≤ MaxIncrease ≤ 1; defaults 0
	// and 0.04 (cake-autorate's factors 1.0 and 1.04).
	MinIncrease, MaxIncrease float64
	// DecayStep is the fraction by which the rate moves towards BaseRate
	// when the load is low, in (0, 1); default 0.01.
	DecayStep float64
	// HighLoad is the fraction of the rate the achieved rate must reach
	// for the load to be high, in (0, 1]; default 0.75.
	HighLoad float64

	// CutRefractory is how long after a cut the rate does not move.
	// Default 300 ms; it should exceed the time the probes take to refill
	// the detection window, so that one episode is not cut twice.
	CutRefractory time.Duration
	// IncreaseRefractory is how long after an increase the rate is not
	// increased again. Default 200 ms (cake-autorate's achieved-rate
	// interval, which paces its increases).
	IncreaseRefractory time.Duration
	// DecayRefractory is how long after any change the rate does not
	// decay towards BaseRate. Default 1 s.
	DecayRefractory time.Duration

	// PacketBytes is the largest packet on the wire: the three delay
	// thresholds grow by its transmission time at the current rate
	// (2.4 ms at 5 Mbit/s), so that one packet ahead of a probe does not
	// count as bufferbloat on a slow link. Default 1500, at most 65535.
	PacketBytes int
	// Reflectors is the number of reflectors the controller keeps state
	// for: samples name one as an index in [0, Reflectors). Default 8, at
	// most 256.
	Reflectors int

	// ResponseDeadline is how long a reflector may be silent before a
	// health check counts an offence against it. Default 1 s.
	ResponseDeadline time.Duration
	// HealthInterval is the period of the health checks. Default 1 s.
	HealthInterval time.Duration
	// OffenceWindow is how many recent health checks the offences are
	// counted over, in [1, 64]; default 60.
	OffenceWindow int
	// OffenceThreshold is how many offences in the window rest a
	// reflector, in [1, OffenceWindow]; default 3.
	OffenceThreshold int
	// ComparisonInterval is the period at which active reflectors are
	// compared with each other. Default 1 minute.
	ComparisonInterval time.Duration
	// BaselineSpread is how far a reflector's baseline may sit above the
	// lowest active baseline before it is rested. Default 20 ms.
	BaselineSpread time.Duration
	// DeltaSpread is how far a reflector's average delay rise may sit
	// above the lowest active one before it is rested. Default 10 ms.
	DeltaSpread time.Duration
	// RestTime is how long a rested reflector's samples stay out of the
	// detection window before it is re-admitted. Default 1 minute.
	RestTime time.Duration
	// ProbeTimeout is how long the rate is held with no sample from an
	// active reflector before it falls back to BaseRate. Default 10 s.
	ProbeTimeout time.Duration
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join. A field bad on its own
// is reported even when a relation also fails. It does not modify c.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "autorate", Field: field, Value: v, Rule: rule})
	}
	d := c.withDefaults()
	rates := true
	for _, r := range [...]struct {
		name string
		v    aqm.Rate
	}{{"MinRate", d.MinRate}, {"BaseRate", d.BaseRate}, {"MaxRate", d.MaxRate}} {
		if r.v > maxRateLimit {
			bad(r.name, r.v, "must be at most 10tbit")
			rates = false
		}
	}
	if rates && !(d.MinRate <= d.BaseRate && d.BaseRate <= d.MaxRate) {
		bad("BaseRate", d.BaseRate, "must be in [MinRate ("+d.MinRate.String()+"), MaxRate ("+d.MaxRate.String()+")]")
	}
	span := func(field string, v time.Duration) bool {
		if v < 0 || v > maxSpan {
			bad(field, v, "must be in [0, 1h]")
			return false
		}
		return true
	}
	thr := span("DelayThreshold", d.DelayThreshold)
	up := span("FullIncreaseBelow", d.FullIncreaseBelow)
	down := span("FullCutAbove", d.FullCutAbove)
	if thr && up && d.FullIncreaseBelow >= d.DelayThreshold {
		bad("FullIncreaseBelow", d.FullIncreaseBelow, "must be less than DelayThreshold ("+d.DelayThreshold.String()+")")
	}
	if thr && down && d.FullCutAbove <= d.DelayThreshold {
		bad("FullCutAbove", d.FullCutAbove, "must be more than DelayThreshold ("+d.DelayThreshold.String()+")")
	}
	for _, s := range [...]struct {
		name string
		v    time.Duration
	}{
		{"CutRefractory", d.CutRefractory}, {"IncreaseRefractory", d.IncreaseRefractory},
		{"DecayRefractory", d.DecayRefractory}, {"ResponseDeadline", d.ResponseDeadline},
		{"HealthInterval", d.HealthInterval}, {"ComparisonInterval", d.ComparisonInterval},
		{"BaselineSpread", d.BaselineSpread}, {"DeltaSpread", d.DeltaSpread},
		{"RestTime", d.RestTime}, {"ProbeTimeout", d.ProbeTimeout},
	} {
		span(s.name, s.v)
	}
	window := func(field string, v, hi int, hiName string) bool {
		if v < 1 || v > hi {
			bad(field, v, "must be in [1, "+hiName+"]")
			return false
		}
		return true
	}
	if window("DetectionWindow", d.DetectionWindow, maxWindow, "64") {
		window("DetectionThreshold", d.DetectionThreshold, d.DetectionWindow, "DetectionWindow")
	} else if d.DetectionThreshold < 1 {
		bad("DetectionThreshold", d.DetectionThreshold, "must be at least 1")
	}
	if window("OffenceWindow", d.OffenceWindow, maxWindow, "64") {
		window("OffenceThreshold", d.OffenceThreshold, d.OffenceWindow, "OffenceWindow")
	} else if d.OffenceThreshold < 1 {
		bad("OffenceThreshold", d.OffenceThreshold, "must be at least 1")
	}
	window("PacketBytes", d.PacketBytes, 65535, "65535")
	window("Reflectors", d.Reflectors, maxReflectors, "256")
	fraction := func(field string, v float64, zeroOK, oneOK bool) bool {
		ok := !math.IsNaN(v) && v >= 0 && v <= 1 && (zeroOK || v > 0) && (oneOK || v < 1)
		if !ok {
			rule := "must be in (0, 1)"
			switch {
			case zeroOK && oneOK:
				rule = "must be in [0, 1]"
			case oneOK:
				rule = "must be in (0, 1]"
			case zeroOK:
				rule = "must be in [0, 1)"
			}
			bad(field, v, rule)
		}
		return ok
	}
	fraction("BaselineRise", d.BaselineRise, false, true)
	fraction("BaselineFall", d.BaselineFall, false, true)
	fraction("DeltaAlpha", d.DeltaAlpha, false, true)
	minCut := fraction("MinCut", d.MinCut, false, false)
	if fraction("MaxCut", d.MaxCut, false, false) && minCut && d.MaxCut < d.MinCut {
		bad("MaxCut", d.MaxCut, "must be at least MinCut")
	}
	fraction("AchievedCut", d.AchievedCut, true, false)
	fraction("Recovery", d.Recovery, true, true)
	minInc := fraction("MinIncrease", d.MinIncrease, true, true)
	if fraction("MaxIncrease", d.MaxIncrease, false, true) && minInc && d.MaxIncrease < d.MinIncrease {
		bad("MaxIncrease", d.MaxIncrease, "must be at least MinIncrease")
	}
	fraction("DecayStep", d.DecayStep, false, false)
	fraction("HighLoad", d.HighLoad, false, true)
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	dur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	num := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	frac := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	// Rates given in part keep their order: a zero BaseRate is the
	// default clamped into the rates that are set, a zero MinRate is at
	// most the base and a zero MaxRate at least the base.
	if c.BaseRate == 0 {
		c.BaseRate = defaultBaseRate
		if c.MinRate != 0 {
			c.BaseRate = max(c.BaseRate, c.MinRate)
		}
		if c.MaxRate != 0 {
			c.BaseRate = min(c.BaseRate, c.MaxRate)
		}
	}
	if c.MinRate == 0 {
		c.MinRate = min(defaultMinRate, c.BaseRate)
	}
	if c.MaxRate == 0 {
		c.MaxRate = max(defaultMaxRate, c.BaseRate)
	}
	dur(&c.DelayThreshold, defaultDelayThreshold)
	dur(&c.FullIncreaseBelow, defaultFullIncreaseBelow)
	dur(&c.FullCutAbove, defaultFullCutAbove)
	num(&c.DetectionWindow, defaultDetectionWindow)
	num(&c.DetectionThreshold, defaultDetectionThreshold)
	frac(&c.BaselineRise, defaultBaselineRise)
	frac(&c.BaselineFall, defaultBaselineFall)
	frac(&c.DeltaAlpha, defaultDeltaAlpha)
	frac(&c.MinCut, defaultMinCut)
	frac(&c.MaxCut, defaultMaxCut)
	frac(&c.MaxIncrease, defaultMaxIncrease)
	frac(&c.DecayStep, defaultDecayStep)
	frac(&c.HighLoad, defaultHighLoad)
	dur(&c.CutRefractory, defaultCutRefractory)
	dur(&c.IncreaseRefractory, defaultIncreaseRefractory)
	dur(&c.DecayRefractory, defaultDecayRefractory)
	num(&c.PacketBytes, defaultPacketBytes)
	num(&c.Reflectors, defaultReflectors)
	dur(&c.ResponseDeadline, defaultResponseDeadline)
	dur(&c.HealthInterval, defaultHealthInterval)
	num(&c.OffenceWindow, defaultOffenceWindow)
	num(&c.OffenceThreshold, defaultOffenceThreshold)
	dur(&c.ComparisonInterval, defaultComparisonInterval)
	dur(&c.BaselineSpread, defaultBaselineSpread)
	dur(&c.DeltaSpread, defaultDeltaSpread)
	dur(&c.RestTime, defaultRestTime)
	dur(&c.ProbeTimeout, defaultProbeTimeout)
	return c
}
