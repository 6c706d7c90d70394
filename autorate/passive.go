package autorate

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"math/bits"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Defaults and limits of [PassiveConfig].
const (
	defaultPassiveFlows = 4096
	defaultIdleTimeout  = 10 * time.Second
	defaultMaxRTT       = 2 * time.Second
	maxPassiveFlows     = 1 << 22
)

// pendingPerFlow is how many timestamps a flow waits on at once: a few
// round trips' samples in flight per flow, and an entry of 136 bytes.
const pendingPerFlow = 4

// PassiveConfig configures a [PassiveRTT]. A zero field means its default.
type PassiveConfig struct {
	// Flows is the number of TCP flows tracked at once, a power of two in
	// [16, 4194304]; default 4096. When the table is full a new flow takes
	// the place of the least recently seen one among those it probes.
	Flows int
	// IdleTimeout is how long a flow may send nothing either way before
	// its entry is free for another. Default 10 s.
	IdleTimeout time.Duration
	// MaxRTT is how long an outbound timestamp or handshake waits for its
	// echo before it is forgotten. Default 2 s.
	MaxRTT time.Duration
	// Seed keys the flow table's hash, so that which flows share probes
	// (and so which one is evicted) cannot be chosen from outside; zero
	// draws a key from crypto/rand, a fixed one reproduces every eviction.
	Seed uint64
}

// Validate reports every bad field as an [aqm.ConfigError], joined with
// errors.Join. It does not modify c.
func (c PassiveConfig) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "autorate", Field: field, Value: v, Rule: rule})
	}
	if n := c.Flows; n != 0 && (n < 16 || n > maxPassiveFlows || n&(n-1) != 0) {
		bad("Flows", n, "must be a power of two in [16, 4194304]")
	}
	if c.IdleTimeout < 0 || c.IdleTimeout > maxSpan {
		bad("IdleTimeout", c.IdleTimeout, "must be in [0, 1h]")
	}
	if c.MaxRTT < 0 || c.MaxRTT > time.Minute {
		bad("MaxRTT", c.MaxRTT, "must be in [0, 1m]")
	}
	return errors.Join(errs...)
}

// PassiveSample is one round trip measured from forwarded packets.
type PassiveSample struct {
	// RTT is the time from the packet's departure towards the WAN to the
	// arrival of the packet that echoed it.
	RTT time.Duration
	// Rise is RTT less the smallest RTT of the same flow so far: what
	// [Controller.Sample] takes, with one reflector index for all flows.
	Rise time.Duration
}

// PassiveStats counts what a PassiveRTT saw.
type PassiveStats struct {
	// Samples counts round trips measured; Handshakes those of them
	// timed from a SYN or SYN-ACK to the segment acknowledging it.
	Samples, Handshakes uint64
	// Skipped counts packets that were not TCP over IPv4 or IPv6 without
	// extension headers, were fragments, or were cut short.
	Skipped uint64
	// Evicted counts flows that lost their entry to a new flow before
	// IdleTimeout; Expired counts timestamps whose echo never came within
	// MaxRTT or was passed over by a later one.
	Evicted, Expired uint64
}

type flowKey [36]byte // LAN address, WAN address (IPv4 mapped into 16 bytes), LAN port, WAN port

type pending struct {
	val uint32   // TSval, or the handshake's sequence number + 1
	at  aqm.Time // when it left; zero: free
}

type passiveFlow struct {
	key  flowKey
	last aqm.Time // zero: a free entry
	min  time.Duration
	ts   [pendingPerFlow]pending
	syn  pending // an outbound SYN or SYN-ACK awaiting its acknowledgement
}

// PassiveRTT measures the round trips of the TCP flows a router forwards,
// with no probe of its own: each packet leaving towards the WAN with a
// TCP timestamp option (RFC 7323) records its TSval and the instant, and
// the first packet from the other end that echoes that value in its TSecr
// closes the round trip. A connection without timestamps gives one sample,
// from its SYN or SYN-ACK leaving to the segment that acknowledges it.
//
// Call Outbound for a packet as it leaves the router towards the WAN,
// after the shaper's queue, and Inbound as one arrives from the WAN,
// before it: the round trip is then the path beyond the router alone, the
// queue a controller must judge, and never the router's own. Each sample
// also carries its rise above the flow's own smallest round trip, since
// flows to different hosts have different paths: feed the rises to a
// [Controller] as the samples of one reflector, and no reflector is
// needed. A flow that starts while the link is already bloated takes a
// bloated minimum and reports rises too small until the queue drains.
//
// A busy router closes hundreds of round trips a second, each carrying the
// link's own jitter (on a cellular link, the wait for the next delivery
// opportunity). A detection window of six samples fed all of them reads
// that jitter as bufferbloat; feed the controller instead the smallest rise
// of each 50 ms, which a queue beyond the shaper raises and the jitter
// does not, and keep the default thresholds (30, 10 and 60 ms).
//
// Memory is fixed at [NewPassiveRTT]: a table of Flows entries of 136
// bytes (544 KiB for the default 4096), open addressing with a keyed
// hash, eight probes. An entry is free once its flow has been idle for
// IdleTimeout or closed with FIN or RST; a new flow that finds none in its
// probes takes the least recently seen.
// Outbound and Inbound allocate nothing. Timestamps compare in serial
// arithmetic (RFC 1982), so they wrap at 2^32 as TCP's do; an echo older
// than one already matched, as reordering brings, finds no pending value
// and gives no sample, and a later echo frees the values before it.
//
// A PassiveRTT is not safe for concurrent use; every method takes now, a
// monotonic [aqm.Time], and reads no clock.
type PassiveRTT struct {
	cfg   PassiveConfig
	seed  uint64
	flows []passiveFlow
	mask  uint64
	stats PassiveStats
}

// NewPassiveRTT returns a PassiveRTT for cfg, or cfg's validation error.
func NewPassiveRTT(cfg PassiveConfig) (*PassiveRTT, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Flows == 0 {
		cfg.Flows = defaultPassiveFlows
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	if cfg.MaxRTT == 0 {
		cfg.MaxRTT = defaultMaxRTT
	}
	if cfg.Seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
		cfg.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	return &PassiveRTT{cfg: cfg, seed: cfg.Seed, flows: make([]passiveFlow, cfg.Flows), mask: uint64(cfg.Flows - 1)}, nil
}

// Stats returns the counters.
func (p *PassiveRTT) Stats() PassiveStats { return p.stats }

// Flows returns the number of flows tracked at now.
func (p *PassiveRTT) Flows(now aqm.Time) int {
	n := 0
	for i := range p.flows {
		if p.live(&p.flows[i], now) {
			n++
		}
	}
	return n
}

// tcp is what Outbound and Inbound read from a packet.
type tcp struct {
	key          flowKey
	seq, ack     uint32
	flags        uint8
	tsval, tsecr uint32
	hasTS        bool
}

const (
	finFlag = 0x01
	synFlag = 0x02
	rstFlag = 0x04
	ackFlag = 0x10
)

// parse reads an IPv4 or IPv6 packet carrying TCP. outbound says which
// end is the LAN's: the source for a packet leaving towards the WAN.
func parse(b []byte, outbound bool, t *tcp) bool {
	if len(b) < 1 {
		return false
	}
	var src, dst []byte
	var l4 []byte
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return false
		}
		ihl := int(b[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(b[2:]))
		if ihl < 20 || total < ihl || total > len(b) || b[9] != 6 || binary.BigEndian.Uint16(b[6:])&0x3fff != 0 {
			return false // not TCP, or a fragment
		}
		src, dst, l4 = b[12:16], b[16:20], b[ihl:total]
	case 6:
		if len(b) < 40 || b[6] != 6 {
			return false // not TCP right after the fixed header
		}
		total := 40 + int(binary.BigEndian.Uint16(b[4:]))
		if total > len(b) {
			return false
		}
		src, dst, l4 = b[8:24], b[24:40], b[40:total]
	default:
		return false
	}
	if len(l4) < 20 {
		return false
	}
	off := int(l4[12]>>4) * 4
	if off < 20 || off > len(l4) {
		return false
	}
	lan, wan, lanPort, wanPort := src, dst, l4[0:2], l4[2:4]
	if !outbound {
		lan, wan, lanPort, wanPort = dst, src, l4[2:4], l4[0:2]
	}
	putAddr(t.key[0:16], lan)
	putAddr(t.key[16:32], wan)
	copy(t.key[32:34], lanPort)
	copy(t.key[34:36], wanPort)
	t.seq = binary.BigEndian.Uint32(l4[4:])
	t.ack = binary.BigEndian.Uint32(l4[8:])
	t.flags = l4[13]
	t.hasTS = false
	opts := l4[20:off]
	for len(opts) > 0 {
		switch opts[0] {
		case 0: // end of options
			return true
		case 1: // no-op
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || opts[1] < 2 || int(opts[1]) > len(opts) {
			return true // malformed options: no timestamp
		}
		if opts[0] == 8 && opts[1] == 10 {
			t.tsval = binary.BigEndian.Uint32(opts[2:])
			t.tsecr = binary.BigEndian.Uint32(opts[6:])
			t.hasTS = true
		}
		opts = opts[opts[1]:]
	}
	return true
}

// putAddr writes a 4- or 16-byte address as 16 bytes, IPv4 mapped.
func putAddr(dst, a []byte) {
	if len(a) == 4 {
		clear(dst[:10])
		dst[10], dst[11] = 0xff, 0xff
		copy(dst[12:], a)
		return
	}
	copy(dst, a)
}

// live reports whether f holds a flow seen within IdleTimeout of now.
func (p *PassiveRTT) live(f *passiveFlow, now aqm.Time) bool {
	return f.last != 0 && f.last.Since(now) < p.cfg.IdleTimeout
}

const probes = 8

// hash mixes the key with the seed, four bytes at a time, each step a
// multiply by a large odd constant and a rotation (as in wyhash and
// xxHash), then splitmix64's finaliser. It is not a keyed PRF; with the
// key secret and eight probes bounding the work, a chosen collision costs
// at most an eviction.
func (p *PassiveRTT) hash(k *flowKey) uint64 {
	h := p.seed
	for i := 0; i < len(k); i += 4 {
		h = bits.RotateLeft64((h^uint64(binary.LittleEndian.Uint32(k[i:])))*0x9e3779b97f4a7c15, 29)
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// lookup returns the flow of key, or, if create, a fresh entry for it (a
// free one, or the least recently seen of the probed); nil otherwise.
func (p *PassiveRTT) lookup(key *flowKey, now aqm.Time, create bool) *passiveFlow {
	h := p.hash(key)
	var victim *passiveFlow
	for i := range uint64(probes) {
		f := &p.flows[(h+i)&p.mask]
		if !p.live(f, now) {
			if victim == nil || p.live(victim, now) {
				victim = f
			}
			continue
		}
		if f.key == *key {
			return f
		}
		if victim == nil || (p.live(victim, now) && f.last.Before(victim.last)) {
			victim = f
		}
	}
	if !create {
		return nil
	}
	if p.live(victim, now) {
		p.stats.Evicted++
	}
	*victim = passiveFlow{key: *key, last: now}
	return victim
}

// Outbound notes a packet leaving towards the WAN at now. Packets that are
// not TCP are counted as skipped and otherwise ignored.
func (p *PassiveRTT) Outbound(now aqm.Time, packet []byte) {
	var t tcp
	if !parse(packet, true, &t) {
		p.stats.Skipped++
		return
	}
	closing := t.flags&(finFlag|rstFlag) != 0
	f := p.lookup(&t.key, now, !closing)
	if f == nil {
		return
	}
	if closing {
		f.last = 0
		return
	}
	f.last = max(f.last, now)
	if t.flags&synFlag != 0 {
		f.syn = pending{val: t.seq + 1, at: now}
	}
	if !t.hasTS {
		return
	}
	free := -1
	for i := range f.ts {
		s := &f.ts[i]
		if s.at != 0 && s.val == t.tsval {
			return // the first packet with a value times it
		}
		if s.at != 0 && s.at.Since(now) > p.cfg.MaxRTT {
			s.at = 0
			p.stats.Expired++
		}
		if s.at == 0 && free < 0 {
			free = i
		}
	}
	if free >= 0 {
		f.ts[free] = pending{val: t.tsval, at: now}
	}
}

// Inbound notes a packet arriving from the WAN at now and returns the
// round trip it closes, if any.
func (p *PassiveRTT) Inbound(now aqm.Time, packet []byte) (PassiveSample, bool) {
	var t tcp
	if !parse(packet, false, &t) {
		p.stats.Skipped++
		return PassiveSample{}, false
	}
	f := p.lookup(&t.key, now, false)
	if f == nil {
		return PassiveSample{}, false
	}
	if t.flags&(finFlag|rstFlag) != 0 {
		f.last = 0
		return PassiveSample{}, false
	}
	f.last = max(f.last, now)
	if t.flags&ackFlag == 0 {
		return PassiveSample{}, false
	}
	rtt, ok := time.Duration(0), false
	if f.syn.at != 0 && t.ack == f.syn.val {
		rtt, ok = f.syn.at.Since(now), true
		f.syn.at = 0
		p.stats.Handshakes++
	}
	if t.hasTS {
		for i := range f.ts {
			s := &f.ts[i]
			switch {
			case s.at == 0:
			case s.val == t.tsecr:
				if !ok {
					rtt, ok = s.at.Since(now), true
				}
				s.at = 0
			case int32(t.tsecr-s.val) > 0: // echoed past: its echo is lost
				s.at = 0
				p.stats.Expired++
			}
		}
	}
	if !ok || rtt > p.cfg.MaxRTT {
		return PassiveSample{}, false
	}
	if f.min == 0 || rtt < f.min {
		f.min = max(rtt, 1)
	}
	p.stats.Samples++
	return PassiveSample{RTT: rtt, Rise: rtt - f.min}, true
}
