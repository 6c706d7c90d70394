package sim

import (
	"errors"
	"fmt"
	"time"
)

// Kind is a sender's congestion control (or traffic pattern).
type Kind uint8

const (
	// Reno is TCP Reno's window (RFC 5681: slow start, congestion
	// avoidance, halving on loss) with SACK-based loss recovery (RFC 6675
	// fast retransmit and recovery, optionally PRR, RFC 6937) and the
	// RFC 6298 retransmission timeout, after which every un-SACKed segment
	// is resent. ns-3 calls this NewReno with SACK on; [TCPConfig] sets the
	// details.
	Reno Kind = iota
	// CUBIC is TCP CUBIC (RFC 9438) on top of the same loss recovery.
	CUBIC
	// Prague is a scalable (L4S) sender in the DCTCP/TCP Prague mould
	// (RFC 9331, RFC 8257): ECT(1), per-packet ECN feedback, an EWMA alpha of
	// the marked fraction, cwnd reduced by alpha/2 at most once per RTT,
	// paced, and a Reno response to loss.
	Prague
	// CBR is an unresponsive constant-bit-rate UDP source.
	CBR
	// Ping sends a small probe every Interval and measures its round trip.
	Ping
	// BBR is BBR version 1 (draft-cardwell-iccrg-bbr-congestion-control,
	// Linux's tcp_bbr constants): a model-based, paced sender that ignores
	// loss except for one round of packet conservation, Not-ECT.
	BBR
)

var kindNames = [...]string{"reno", "cubic", "prague", "cbr", "ping", "bbr"}

// String returns the kind's lower-case name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// MarshalText makes kinds readable in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a kind name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	*k = v
	return err
}

// ParseKind parses a kind name as printed by [Kind.String].
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("sim: unknown sender kind %q (want one of reno, cubic, prague, cbr, ping, bbr)", s)
}

// FlowSpec describes one group of identical flows.
type FlowSpec struct {
	// Kind is the congestion control or traffic pattern.
	Kind Kind
	// Count is the number of identical flows; zero means one.
	Count int
	// ECN makes a Reno or CUBIC flow send ECT(0) and treat a CE echo like a
	// loss, at most once per RTT (RFC 3168), and makes a CBR flow send
	// ECT(0) (it ignores marks). Prague flows always send ECT(1); pings are
	// always Not-ECT.
	ECN bool
	// RTT is the base round-trip time (propagation only). Zero means
	// [DefaultRTT].
	RTT time.Duration
	// Start and Stop bound when the flow sends, from the start of the run.
	// Stop zero means the end of the run.
	Start, Stop time.Duration
	// SizePackets limits a TCP flow to that many segments; zero means a
	// long-lived (bulk) flow.
	SizePackets int64
	// RateBps is a CBR flow's rate in bits per second.
	RateBps float64
	// Interval is a ping flow's probe interval. Zero means 100 ms.
	Interval time.Duration
	// PacketBytes is the size on the wire of each packet. Zero means the
	// run's MSS (64 bytes for pings).
	PacketBytes int
	// Group labels the flows for reporting (for example "test" and "cross"
	// in the speedtest scenario); results carry it.
	Group string `json:",omitempty"`
	// Paced makes a Reno or CUBIC flow pace its packets (Prague always
	// paces): Linux's rate of 2·cwnd/srtt in slow start and 1.2·cwnd/srtt
	// afterwards.
	Paced bool
	// HyStart makes a Reno or CUBIC flow leave slow start by HyStart++
	// (RFC 9406): a rise of the per-round minimum RTT moves it to
	// conservative slow start, and five rounds of that to congestion
	// avoidance. Off, slow start lasts until the first loss or mark.
	HyStart bool `json:",omitempty"`
	// PragueNoRTTIndependence turns off a Prague flow's RTT independence
	// (on by default, as in TCP Prague), leaving DCTCP's +1 segment per own
	// RTT and an α update and reduction per own RTT.
	PragueNoRTTIndependence bool `json:",omitempty"`
	// Reverse sends the flow's data through the reverse direction's queue
	// and its ACKs through the forward one (a download beside the
	// uploads); it needs [Config.Reverse].
	Reverse bool `json:",omitempty"`
}

// ShortFlows is a Poisson process of finite TCP flows (web-like traffic)
// whose completion times are measured.
type ShortFlows struct {
	// PerSecond is the mean arrival rate; zero disables short flows.
	PerSecond float64
	// Kind is the flows' congestion control (Reno, CUBIC or Prague).
	Kind Kind
	// ECN is as in [FlowSpec].
	ECN bool
	// MeanPackets is the mean flow size in segments. Zero means 20.
	MeanPackets float64
	// ParetoShape, if above 1, draws sizes from a Pareto distribution with
	// that shape (heavy tail, as web objects); zero draws them from an
	// exponential distribution.
	ParetoShape float64
	// MaxPackets caps a flow's size. Zero means 10000.
	MaxPackets int64
	// RTT is the flows' base RTT. Zero means [DefaultRTT].
	RTT time.Duration
}

// RateChange sets the bottleneck rate from time At on.
type RateChange struct {
	At      time.Duration
	RateBps float64
}

// Defaults of [Config] and [FlowSpec].
const (
	DefaultMSS            = 1500
	DefaultRTT            = 20 * time.Millisecond
	DefaultSampleInterval = 100 * time.Millisecond
	DefaultHeaderBytes    = 40
	// GoodputBin is the width of the fixed bins of receiver goodput behind
	// the 100 ms coefficients of variation and the per-group instantaneous
	// throughput.
	GoodputBin          = 100 * time.Millisecond
	defaultPingInterval = 100 * time.Millisecond
	pingBytes           = 64
)

// Config is one simulation run: a dumbbell whose senders share one
// bottleneck link, and which metrics to keep. The queue is given separately.
type Config struct {
	// RateBps is the bottleneck rate in bits per second.
	RateBps float64
	// Shaper, if set, puts an HTB-like shaper between the queue and the
	// link; RateBps is then the physical line rate and Shaper.RateBps the
	// rate the path is limited to (utilization is against it).
	Shaper *Shaper `json:",omitempty"`
	// RateChanges optionally change the rate during the run.
	RateChanges []RateChange `json:",omitempty"`
	// Capacity, if set, makes the link send as the trace allows instead of
	// at RateBps (see [Trace]); RateBps is then the nominal rate the AQMs
	// are sized for, and utilization is against the trace's capacity.
	Capacity *Trace `json:",omitempty"`
	// Reverse, if set, gives the path a second bottleneck direction with
	// its own queue (the same constructor, its own state) and rate: the
	// forward flows' ACKs and the pings' echoes wait there behind the data
	// of the flows marked [FlowSpec.Reverse], whose ACKs wait in the
	// forward queue. Nil returns every ACK and echo without queueing. The
	// result's aggregate goodput, delays and queue averages stay those of
	// the forward queue's data and every receiver; [Result.Reverse]
	// describes the reverse link.
	Reverse *ReversePath `json:",omitempty"`
	// MSS is the on-wire size of a full data packet in bytes, headers and
	// options included (an MTU, not a TCP MSS). Zero means 1500.
	MSS int
	// Duration is the simulated time.
	Duration time.Duration
	// Warmup is excluded from every metric (but not from the time series).
	Warmup time.Duration
	// Seed selects the random streams (forward-path loss, short-flow
	// arrivals and sizes, start-time jitter). The AQM's own seed is set by
	// its constructor.
	Seed uint64
	// Flows are the long-lived flows, CBR sources and pings.
	Flows []FlowSpec
	// StartJitter delays each flow's start by a uniform random time in
	// [0, StartJitter), so flows with equal settings do not move in
	// lockstep and repetitions with different seeds differ.
	StartJitter time.Duration `json:",omitempty"`
	// Short is the Poisson short-flow workload (disabled if PerSecond is 0).
	Short ShortFlows
	// LossProb drops each data packet with this probability before it
	// reaches the bottleneck (a lossy access link; for model checks).
	LossProb float64 `json:",omitempty"`
	// MarkProb sets CE on each ECN-capable data packet with this probability
	// before the bottleneck (for model checks).
	MarkProb float64 `json:",omitempty"`
	// SampleInterval is the period of the time series and of the
	// throughput coefficient of variation. Zero means 100 ms.
	SampleInterval time.Duration
	// Series keeps the time series in the result.
	Series bool
	// HeaderBytes is how much of each TCP data packet is IP and TCP
	// headers (not payload), for the payload goodput. Zero means 40 (IPv4
	// and TCP without options); the TCP options of [TCPConfig]
	// (TimestampBytes) come on top, and the sum must be less than every TCP
	// flow's packet size.
	HeaderBytes int `json:",omitempty"`
	// QueueSampleInterval, if positive, samples the queue length in
	// packets on a fixed grid of that period over the measured period, for
	// [Result.QueueGrid]. Zero disables the grid.
	QueueSampleInterval time.Duration `json:",omitempty"`
	// TCP is the TCP stack of every TCP flow: ACK policy, window growth,
	// loss recovery, retransmission timer, options. The zero value means
	// [LinuxTCP]; scenarios choose a profile ([NS3TCP] or [LinuxTCP]).
	TCP TCPConfig
	// Trace, if set, is called on every ACK a TCP flow processes with the
	// flow's index and congestion window (for tests of window dynamics).
	Trace func(now time.Duration, flow int, cwnd float64) `json:"-"`
}

func (c *Config) normalize() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, fmt.Errorf("sim: %s (%v) %s", field, v, rule))
	}
	if !(c.RateBps > 0) {
		bad("RateBps", c.RateBps, "must be positive")
	}
	if c.Duration <= 0 {
		bad("Duration", c.Duration, "must be positive")
	}
	if c.Warmup < 0 || (c.Duration > 0 && c.Warmup >= c.Duration) {
		bad("Warmup", c.Warmup, "must be in [0, Duration)")
	}
	if c.MSS < 0 || c.MSS > 1<<16 {
		bad("MSS", c.MSS, "must be in [0, 65536]")
	}
	if c.LossProb < 0 || c.LossProb >= 1 {
		bad("LossProb", c.LossProb, "must be in [0, 1)")
	}
	if c.MarkProb < 0 || c.MarkProb > 1 {
		bad("MarkProb", c.MarkProb, "must be in [0, 1]")
	}
	for i, r := range c.RateChanges {
		if !(r.RateBps > 0) || r.At < 0 {
			bad(fmt.Sprintf("RateChanges[%d]", i), r, "needs At ≥ 0 and a positive rate")
		}
	}
	for i, f := range c.Flows {
		if f.Kind > BBR {
			bad(fmt.Sprintf("Flows[%d].Kind", i), f.Kind, "is unknown")
		}
		if f.Kind == BBR && f.ECN {
			bad(fmt.Sprintf("Flows[%d].ECN", i), f.ECN, "must be false for BBR (version 1 does not respond to ECN)")
		}
		if f.Count < 0 || f.RTT < 0 || f.Start < 0 || f.Stop < 0 || f.SizePackets < 0 || f.PacketBytes < 0 || f.Interval < 0 {
			bad(fmt.Sprintf("Flows[%d]", i), f, "has a negative field")
		}
		if f.Reverse && c.Reverse == nil {
			bad(fmt.Sprintf("Flows[%d].Reverse", i), f.Reverse, "needs Config.Reverse")
		}
		if f.Kind == CBR && !(f.RateBps > 0) {
			bad(fmt.Sprintf("Flows[%d].RateBps", i), f.RateBps, "must be positive for a CBR flow")
		}
	}
	if s := c.Short; s.PerSecond < 0 || s.MeanPackets < 0 || s.MaxPackets < 0 || (s.ParetoShape != 0 && s.ParetoShape <= 1) || s.Kind > Prague {
		bad("Short", s, "needs non-negative rates and sizes, ParetoShape 0 or > 1, and a TCP kind")
	}
	c.TCP.normalize(bad)
	mss := c.MSS
	if mss == 0 {
		mss = DefaultMSS
	}
	if c.HeaderBytes < 0 || c.HeaderBytes+c.TCP.TimestampBytes >= mss {
		bad("HeaderBytes", c.HeaderBytes, "plus TCP.TimestampBytes must be in [0, MSS)")
	}
	if c.Shaper != nil {
		c.Shaper.validate(bad)
	}
	if c.Reverse != nil {
		c.Reverse.validate(c, bad)
	}
	if c.Capacity != nil {
		c.Capacity.validate(bad)
		if len(c.RateChanges) > 0 {
			bad("RateChanges", len(c.RateChanges), "cannot be combined with a Capacity trace")
		}
	}
	if c.QueueSampleInterval < 0 {
		bad("QueueSampleInterval", c.QueueSampleInterval, "must not be negative")
	}
	if c.SampleInterval < 0 || c.StartJitter < 0 {
		bad("SampleInterval", c.SampleInterval, "and StartJitter must not be negative")
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.MSS == 0 {
		c.MSS = DefaultMSS
	}
	if c.Reverse != nil {
		r := *c.Reverse // the caller's value stays as given
		r.normalize(c.RateBps)
		c.Reverse = &r
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = DefaultSampleInterval
	}
	if c.HeaderBytes == 0 {
		c.HeaderBytes = DefaultHeaderBytes
	}
	if c.Short.MeanPackets == 0 {
		c.Short.MeanPackets = 20
	}
	if c.Short.MaxPackets == 0 {
		c.Short.MaxPackets = 10000
	}
	if c.Short.RTT == 0 {
		c.Short.RTT = DefaultRTT
	}
	return nil
}

// BottleneckBps is the rate the path is limited to: the shaper's rate if
// there is one, else the link's.
func (c *Config) BottleneckBps() float64 {
	if c.Shaper != nil {
		return c.Shaper.RateBps
	}
	return c.RateBps
}

// MaxRTT returns the largest base RTT among the configured flows (the
// default RTT if none sets one): AQMs that tune to the path use it.
func (c *Config) MaxRTT() time.Duration {
	m := time.Duration(0)
	for _, f := range c.Flows {
		r := f.RTT
		if r == 0 {
			r = DefaultRTT
		}
		m = max(m, r)
	}
	if c.Short.PerSecond > 0 {
		m = max(m, c.Short.RTT)
	}
	if m == 0 {
		m = DefaultRTT
	}
	return m
}
