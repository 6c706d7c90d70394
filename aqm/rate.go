package aqm

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Rate is a link or shaping rate in bits per second. Every rate in aqmkit's
// configurations has this type. It prints and parses in the syntax of
// Linux tc ("100mbit", "1.5gbit", "64kbit", "12500kbps" for bytes), and a
// *Rate is a [flag.Value], so a command-line flag takes the same syntax:
//
//	rate := 100 * aqm.Mbit
//	flag.Var(&rate, "rate", "link rate (tc syntax: 8mbit, 1.5gbit)")
//
// The zero Rate means "unlimited" or "not set", as each field documents.
type Rate uint64

// Common rates. The decimal prefixes are those of tc's kbit, mbit and gbit
// (powers of 1000).
const (
	Bit  Rate = 1
	Kbit Rate = 1000 * Bit
	Mbit Rate = 1000 * Kbit
	Gbit Rate = 1000 * Mbit
	Tbit Rate = 1000 * Gbit
)

// ErrInvalidRate is wrapped by every error of [ParseRate].
var ErrInvalidRate = errors.New("invalid rate")

// rateUnits are tc's rate suffixes (iproute2 get_rate), compared without
// regard to case, with their size in bits per second. A bare number is in
// bits per second, as in tc; "bps" is bytes per second.
var rateUnits = [...]struct {
	name  string
	scale float64
}{
	{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
	{"kibit", 1 << 10}, {"mibit", 1 << 20}, {"gibit", 1 << 30}, {"tibit", 1 << 40},
	{"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12},
	{"kibps", 8 << 10}, {"mibps", 8 << 20}, {"gibps", 8 << 30}, {"tibps", 8 << 40},
}

// ParseRate parses a rate in tc's syntax: a non-negative decimal number
// followed by an optional unit, bit, kbit, mbit, gbit, tbit (powers of
// 1000), kibit, mibit, gibit, tibit (powers of 1024), or the same with bps
// for bytes per second ("bps", "kbps", "mibps" ...). Units are not case
// sensitive; a bare number is in bits per second. The result is rounded to
// the nearest bit per second.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == 'e' || t[i] == 'E' || t[i] == '+') {
		// Stop at an 'e' that starts a unit rather than an exponent.
		if (t[i] == 'e' || t[i] == 'E') && (i+1 >= len(t) || !(t[i+1] >= '0' && t[i+1] <= '9' || t[i+1] == '+')) {
			break
		}
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &rateError{s, "is not a non-negative number with a tc unit (8mbit, 1.5gbit, 100kbps)"}
	}
	scale := 0.0
	if unit == "" {
		scale = 1
	}
	for _, u := range rateUnits {
		if unit == u.name {
			scale = u.scale
			break
		}
	}
	if scale == 0 {
		return 0, &rateError{s, "has an unknown unit (use bit, kbit, mbit, gbit, tbit, or bps, kbps, mbps, gbps for bytes)"}
	}
	r := math.Round(v * scale)
	if r >= math.MaxUint64 {
		return 0, &rateError{s, "is too large"}
	}
	return Rate(r), nil
}

type rateError struct{ in, why string }

func (e *rateError) Error() string { return "aqm: rate " + strconv.Quote(e.in) + " " + e.why }
func (e *rateError) Unwrap() error { return ErrInvalidRate }

// String formats r in tc's syntax with the largest decimal unit that keeps
// it at least 1 ("100mbit", "1.5gbit", "999bit"); ParseRate reads it back
// to the same Rate.
func (r Rate) String() string {
	unit, scale := "bit", 1.0
	switch {
	case r >= Tbit:
		unit, scale = "tbit", 1e12
	case r >= Gbit:
		unit, scale = "gbit", 1e9
	case r >= Mbit:
		unit, scale = "mbit", 1e6
	case r >= Kbit:
		unit, scale = "kbit", 1e3
	}
	if scale == 1 {
		return strconv.FormatUint(uint64(r), 10) + unit
	}
	// The exact decimal quotient: integer part and up to 12 fractional digits.
	q, rem := uint64(r)/uint64(scale), uint64(r)%uint64(scale)
	s := strconv.FormatUint(q, 10)
	if rem != 0 {
		frac := strconv.FormatUint(rem+uint64(scale), 10)[1:] // zero-padded
		s += "." + strings.TrimRight(frac, "0")
	}
	return s + unit
}

// Set parses s with [ParseRate] into r; with String it makes *Rate a
// [flag.Value].
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalText formats r as String does, for encoding/json and friends.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses text as ParseRate does.
func (r *Rate) UnmarshalText(text []byte) error { return r.Set(string(text)) }

// TxTime returns how long bytes take to send at rate r, rounded up to the
// nanosecond, or 0 when r is zero (unlimited). It saturates at the largest
// Duration instead of overflowing.
func (r Rate) TxTime(bytes int64) time.Duration {
	if r == 0 || bytes <= 0 {
		return 0
	}
	// bits*1e9/r with a 128-bit intermediate.
	nbits := uint64(bytes) * 8
	hi, lo := bits.Mul64(nbits, uint64(time.Second))
	if hi >= uint64(r) {
		return math.MaxInt64
	}
	q, rem := bits.Div64(hi, lo, uint64(r))
	if rem != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(q)
}

// BytesIn returns how many whole bytes rate r sends in d, saturating at the
// largest int64; 0 if d is not positive. It returns math.MaxInt64 for the
// zero (unlimited) rate.
func (r Rate) BytesIn(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	if r == 0 {
		return math.MaxInt64
	}
	hi, lo := bits.Mul64(uint64(r), uint64(d))
	den := uint64(8 * time.Second)
	if hi >= den {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, den)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Sizing of the presets (ConfigForLink in each algorithm package).
const (
	// defaultRTT is the round-trip time the presets assume when given none:
	// 100 ms, CoDel's interval and the usual planning figure for Internet
	// paths.
	defaultRTT = 100 * time.Millisecond
	// minBufferBytes is the smallest buffer a preset gives, 64 KiB, so that
	// a slow link still absorbs a burst of a few dozen full-size packets.
	minBufferBytes = 64 << 10
	// maxBufferBytes is the largest buffer a preset gives, 32 MiB, the
	// memory FQ-CoDel takes by default.
	maxBufferBytes = 32 << 20
	// fullPacketBytes is the packet size the presets use to turn bytes
	// into packets: an Ethernet MTU plus its 14-byte header. The queues'
	// own checks use the same number from internal/frame, which the
	// contract does not import; a test there holds the two equal.
	fullPacketBytes = 1514
)

// BufferBytes returns the buffer, in bytes, that the presets give a queue
// draining at rate r for flows whose round-trip time is about rtt: four
// round trips' worth at r (as CAKE sizes its buffer), at least
// 64 KiB and at most 32 MiB. A zero rtt means
// 100 ms; a zero (unlimited) rate gets the maximum. At 8 Mb/s and
// 100 ms this is 400 kB, 400 ms of queue at most.
func (r Rate) BufferBytes(rtt time.Duration) int {
	if rtt <= 0 {
		rtt = defaultRTT
	}
	if r == 0 {
		return maxBufferBytes
	}
	b := r.BytesIn(rtt)
	if b > maxBufferBytes/4 {
		return maxBufferBytes
	}
	return int(max(4*b, minBufferBytes))
}

// BufferPackets returns [Rate.BufferBytes] in full-size packets
// (1514 bytes, an Ethernet MTU plus its header), rounded up.
func (r Rate) BufferPackets(rtt time.Duration) int {
	b := r.BufferBytes(rtt)
	return (b + fullPacketBytes - 1) / fullPacketBytes
}
