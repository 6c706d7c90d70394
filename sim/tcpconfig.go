package sim

import (
	"fmt"
	"time"
)

// TCPConfig is the TCP stack every TCP flow of a run uses: the receiver's
// ACK policy and the sender's window growth, sending rule, loss detection,
// recovery and retransmission timer. Each behaviour is one field, set as
// the references do it by the two profiles, [NS3TCP] and [LinuxTCP]; start
// from one of them and change single fields to see what each contributes.
//
// The zero TCPConfig means [LinuxTCP]. A TCPConfig with any field set must
// name its Profile (a label printed with every result).
type TCPConfig struct {
	// Profile labels the stack in results and tables: "ns3", "linux", or
	// any name for a modified profile.
	Profile string

	// AckEvery is how many full in-order segments the receiver collects
	// before it ACKs: 1 ACKs every segment, 2 is the delayed ACK of
	// RFC 5681 §4.2 (ns-3's DelAckCount 2, Linux). Out-of-order segments,
	// segments that fill all or part of a gap, and duplicates are always
	// ACKed at once.
	AckEvery int
	// DelayedAckTimeout bounds how long a delayed ACK waits for the next
	// segment: 200 ms in ns-3 (DelAckTimeout), 40 ms in Linux (its minimum
	// ATO; Linux adapts it to the arrival pattern, which is not modelled).
	// Unused when AckEvery is 1.
	DelayedAckTimeout time.Duration
	// QuickAcks is Linux's quick-ack mode: the receiver ACKs every segment
	// for its first QuickAcks segments, and again for that many after data
	// arrives following a silence longer than MinRTO. Zero turns it off
	// (ns-3).
	QuickAcks int

	// Growth is how an ACK opens the window: once per ACK whatever it
	// covers (RFC 5681, ns-3's NewReno) or by the segments it acknowledges
	// (RFC 3465 ABC, Linux). It applies to Reno and CUBIC; Prague always
	// counts segments, BBR sets its own window.
	Growth Growth
	// ABCLimit is the most segments one ACK may add in slow start under
	// [GrowABC] (RFC 3465's L). Zero means no limit, as Linux.
	ABCLimit int

	// PartialSegments sends a segment whenever the pipe is below cwnd, so
	// that a window of 2.1 sends three segments. False sends whole segments
	// only, while cwnd − pipe ≥ 1 (RFC 6675 (C), ns-3, Linux's integer
	// window).
	PartialSegments bool

	// Ssthresh is what a Reno loss response halves: the pipe (RFC 6675,
	// ns-3), the window (Linux's tcp_reno_ssthresh) or all unacknowledged
	// data (RFC 5681's FlightSize taken literally). CUBIC always uses
	// 0.7 × cwnd.
	Ssthresh SsthreshBase

	// FACK declares lost every hole more than three sequence numbers below
	// the highest SACKed segment (forward acknowledgement). False uses
	// RFC 6675's IsLost: a hole is lost once DupThresh (3) SACKed segments
	// lie above it (ns-3; Linux's SACK scoreboard without RACK).
	FACK bool

	// SackedRetransInPipe keeps a retransmitted segment counted in the
	// pipe after the receiver SACKs it, until the cumulative ACK passes
	// it or a timeout resets the scoreboard, as ns-3 3.37's transmit
	// buffer does (it forgets a segment's retransmitted mark only when the
	// segment is cumulatively ACKed). While the cumulative ACK waits behind
	// a lost retransmission, the pipe then holds one phantom segment for
	// every other retransmission delivered, and the sender slows down
	// until its timeout. False takes a SACKed segment out of the pipe,
	// retransmitted or not (RFC 6675, Linux).
	SackedRetransInPipe bool

	// PRR paces retransmissions and new data during fast recovery by
	// Proportional Rate Reduction (RFC 6937, with the slow-start reduction
	// bound, as ns-3 and Linux). False sets cwnd to ssthresh on entering
	// recovery (RFC 6675).
	PRR bool

	// MinRTO is the lower bound of the retransmission timeout: 1 s in
	// RFC 6298 and ns-3, 200 ms in Linux.
	MinRTO time.Duration
	// LinuxRTO computes the timeout as Linux does, srtt + max(4·rttvar,
	// MinRTO), so MinRTO floors the variance term. False is RFC 6298's
	// max(srtt + 4·rttvar, MinRTO).
	LinuxRTO bool
	// Karn takes no RTT sample from an ACK triggered by a retransmitted
	// segment (Karn's algorithm, RFC 6298 §3; ns-3 even with timestamps).
	// False samples every ACK through the timestamp echo (Linux).
	Karn bool

	// TimestampBytes is the TCP timestamp option's size on every data
	// segment (12: 10 bytes and 2 of padding, RFC 7323; 0: off). It
	// counts as header, not payload.
	TimestampBytes int

	// InitialWindow is the window after the handshake, in segments
	// (RFC 6928's 10). Zero means 10.
	InitialWindow int

	// HyStart makes CUBIC flows leave slow start by HyStart++ (RFC 9406),
	// as [FlowSpec.HyStart] does for one flow.
	HyStart bool

	// AckAggregation gives BBR flows Linux's allowance for ACK aggregation
	// (since Linux 4.20): once the pipe is full, BBR's window target grows
	// by the most data recently ACKed beyond what its bandwidth estimate
	// predicts, so that a sender whose ACKs come in bursts keeps sending
	// through the silences between them. ns-3's TcpBbr has a variant that
	// restarts its measurement every 4 KB ACKed, which keeps the allowance
	// near one ACK's worth; the ns3 profile leaves it off.
	AckAggregation bool
}

// Growth selects how an ACK opens the congestion window.
type Growth uint8

const (
	// GrowPerAck adds once per ACK that advances the cumulative ACK: one
	// segment in slow start, 1/cwnd in congestion avoidance (RFC 5681,
	// ns-3's NewReno). With delayed ACKs slow start grows about 1.5× per
	// RTT.
	GrowPerAck Growth = iota
	// GrowABC adds by the segments acknowledged (RFC 3465 appropriate byte
	// counting, capped by ABCLimit in slow start; Linux counts packets).
	GrowABC
)

// SsthreshBase selects the quantity a Reno loss response halves.
type SsthreshBase uint8

const (
	// SsthreshPipe halves RFC 6675's pipe at the moment of the loss:
	// outstanding data less what is SACKed or presumed lost, plus
	// retransmissions in flight (ns-3).
	SsthreshPipe SsthreshBase = iota
	// SsthreshCwnd halves the congestion window (Linux's Reno).
	SsthreshCwnd
	// SsthreshFlight halves all unacknowledged data.
	SsthreshFlight
)

// NS3TCP returns ns-3 3.37's default TCP socket: delayed ACKs (every second
// segment, 200 ms), NewReno growth once per ACK, whole segments, ssthresh
// from the pipe, RFC 6675 IsLost, SACKed retransmissions kept in the pipe
// until cumulatively ACKed, PRR, RFC 6298 RTO with a 1 s minimum and
// Karn's rule, timestamps on, initial window 10, BBR without the
// ACK-aggregation allowance.
func NS3TCP() TCPConfig {
	return TCPConfig{
		Profile: "ns3", AckEvery: 2, DelayedAckTimeout: 200 * time.Millisecond,
		Growth: GrowPerAck, Ssthresh: SsthreshPipe, SackedRetransInPipe: true, PRR: true,
		MinRTO: time.Second, Karn: true, TimestampBytes: 12, InitialWindow: 10,
	}
}

// LinuxTCP returns Linux 6.x's TCP: delayed ACKs (every second segment,
// 40 ms) with 16 quick-acks at the start and after idle, growth by the
// segments ACKed, whole segments, Reno's ssthresh from cwnd, SACK loss
// marking by RFC 6675's IsLost (RACK and TLP are not modelled), PRR, an RTO
// of srtt + max(4·rttvar, 200 ms) with timestamp samples, timestamps on,
// initial window 10, CUBIC with HyStart++, BBR with its ACK-aggregation
// allowance.
func LinuxTCP() TCPConfig {
	return TCPConfig{
		Profile: "linux", AckEvery: 2, DelayedAckTimeout: 40 * time.Millisecond, QuickAcks: 16,
		Growth: GrowABC, Ssthresh: SsthreshCwnd, PRR: true,
		MinRTO: 200 * time.Millisecond, LinuxRTO: true, TimestampBytes: 12, InitialWindow: 10,
		HyStart: true, AckAggregation: true,
	}
}

// TCPProfile returns the profile called name ("ns3" or "linux").
func TCPProfile(name string) (TCPConfig, error) {
	switch name {
	case "ns3":
		return NS3TCP(), nil
	case "linux":
		return LinuxTCP(), nil
	}
	return TCPConfig{}, fmt.Errorf("sim: unknown TCP profile %q (want ns3 or linux)", name)
}

// String is the profile's label.
func (c TCPConfig) String() string { return c.Profile }

// normalize fills in the zero TCPConfig and checks the fields, reporting
// bad ones through bad.
func (c *TCPConfig) normalize(bad func(field string, v any, rule string)) {
	if *c == (TCPConfig{}) {
		*c = LinuxTCP()
		return
	}
	if c.Profile == "" {
		bad("TCP.Profile", c.Profile, "must label a TCPConfig whose fields are set (start from NS3TCP or LinuxTCP)")
	}
	if c.AckEvery < 1 || c.AckEvery > 64 {
		bad("TCP.AckEvery", c.AckEvery, "must be in [1, 64]")
	}
	if c.AckEvery > 1 && (c.DelayedAckTimeout <= 0 || c.DelayedAckTimeout > time.Second) {
		bad("TCP.DelayedAckTimeout", c.DelayedAckTimeout, "must be in (0, 1s] with delayed ACKs")
	}
	if c.QuickAcks < 0 {
		bad("TCP.QuickAcks", c.QuickAcks, "must not be negative")
	}
	if c.Growth > GrowABC {
		bad("TCP.Growth", c.Growth, "is unknown")
	}
	if c.ABCLimit < 0 {
		bad("TCP.ABCLimit", c.ABCLimit, "must not be negative")
	}
	if c.Ssthresh > SsthreshFlight {
		bad("TCP.Ssthresh", c.Ssthresh, "is unknown")
	}
	if c.MinRTO <= 0 || c.MinRTO > maxRTO {
		bad("TCP.MinRTO", c.MinRTO, "must be in (0, 60s]")
	}
	if c.TimestampBytes < 0 || c.TimestampBytes > 40 {
		bad("TCP.TimestampBytes", c.TimestampBytes, "must be in [0, 40] (TCP options)")
	}
	if c.InitialWindow < 0 || c.InitialWindow > 1000 {
		bad("TCP.InitialWindow", c.InitialWindow, "must be in [0, 1000]")
	}
	if c.InitialWindow == 0 {
		c.InitialWindow = initCwnd
	}
}

var growthNames = [...]string{"per-ack", "abc"}

// String returns the growth rule's name: "per-ack" or "abc".
func (g Growth) String() string {
	if int(g) < len(growthNames) {
		return growthNames[g]
	}
	return fmt.Sprintf("growth(%d)", g)
}

// MarshalText makes the growth rule readable in JSON.
func (g Growth) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses a name [Growth.String] prints.
func (g *Growth) UnmarshalText(b []byte) error {
	for i, n := range growthNames {
		if n == string(b) {
			*g = Growth(i)
			return nil
		}
	}
	return fmt.Errorf("sim: unknown growth rule %q (want per-ack or abc)", b)
}

var ssthreshNames = [...]string{"pipe", "cwnd", "flight"}

// String returns the base's name: "pipe", "cwnd" or "flight".
func (b SsthreshBase) String() string {
	if int(b) < len(ssthreshNames) {
		return ssthreshNames[b]
	}
	return fmt.Sprintf("ssthresh(%d)", b)
}

// MarshalText makes the base readable in JSON.
func (b SsthreshBase) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses a name [SsthreshBase.String] prints.
func (b *SsthreshBase) UnmarshalText(t []byte) error {
	for i, n := range ssthreshNames {
		if n == string(t) {
			*b = SsthreshBase(i)
			return nil
		}
	}
	return fmt.Errorf("sim: unknown ssthresh base %q (want pipe, cwnd or flight)", t)
}
