package wgtun

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/queues"
)

// Algorithm names the queue a [Device] puts on the packets it reads: a name
// of package queues' registry ([queues.Names]: fifo, red, codel, pie,
// dualpi2, fq-codel, cake, …) or [PassThrough]. The empty Algorithm means
// [FQCoDel]. An Algorithm is a [flag.Value], so a program can take it from
// its command line.
type Algorithm string

const (
	// FQCoDel is FQ-CoDel (RFC 8290): one CoDel queue per flow, served
	// round robin, so a sparse flow never waits behind a bulk one.
	FQCoDel Algorithm = "fq-codel"
	// DualPI2 is the DualQ Coupled AQM (RFC 9332): a shallow queue for
	// L4S traffic (ECT(1) and CE) coupled to a PI2 queue for the rest.
	DualPI2 Algorithm = "dualpi2"
	// FIFO is a drop-tail FIFO (Linux pfifo), the baseline an AQM is
	// compared with.
	FIFO Algorithm = "fifo"
	// PassThrough puts no queue on the packets: [Device.Read] reads the
	// device into the caller's buffers and returns what it read, so that
	// the wrapper's own cost can be measured. It shapes nothing: Rate,
	// LimitPackets, DisableECN and Params must be zero.
	PassThrough Algorithm = "pass-through"
)

// String returns the algorithm's name; the empty Algorithm prints as
// "fq-codel".
func (a Algorithm) String() string {
	if a == "" {
		return string(FQCoDel)
	}
	return string(a)
}

// Set sets a to the registry's spelling of s (case-insensitive, "_" for
// "-") or to [PassThrough]; an unknown name is an error that wraps
// [queues.ErrUnknown] and lists the names there are.
func (a *Algorithm) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), string(PassThrough)) {
		*a = PassThrough
		return nil
	}
	spec, ok := queues.Lookup(s)
	if !ok {
		return fmt.Errorf("wgtun: %w %q (known: %s, %s)", queues.ErrUnknown, s, strings.Join(queues.Names(), ", "), PassThrough)
	}
	*a = Algorithm(spec.Name)
	return nil
}

// spec returns the registry entry of a (false for PassThrough or an
// unknown name).
func (a Algorithm) spec() (queues.Spec, bool) {
	if a == PassThrough {
		return queues.Spec{}, false
	}
	return queues.Lookup(a.String())
}

// Per-packet overheads of a WireGuard tunnel, for [Config.OverheadBytes]:
// the 32 bytes WireGuard adds (a 16-byte data message header and a 16-byte
// authentication tag), the outer UDP header and the outer IP header. The
// padding of the inner packet to a multiple of 16 bytes (at most 15 bytes)
// is not included.
const (
	OverheadIPv4 = 32 + 8 + 20
	OverheadIPv6 = 32 + 8 + 40
)

// MaxBatch is the most packets one [Device.Read] returns, whatever the
// length of its bufs: wireguard-go's batch size on Linux.
const MaxBatch = 128

// Config configures a [Device]. The zero value is FQ-CoDel without a rate,
// which shapes nothing: set Rate.
type Config struct {
	// Rate is the rate at which Read hands out packets, counting
	// OverheadBytes per packet. Set it a little below the tunnel's
	// bottleneck (the uplink's rate, say 95%), so that the queue forms
	// here, where the AQM controls it, and not in wireguard-go's channels
	// or the network. Zero means unlimited: Read then reads the device
	// itself whenever the queue is empty (see the package doc, How), and a
	// backlog forms here only after a shaped period. It can be changed
	// with [Device.SetRate].
	Rate aqm.Rate
	// Algorithm is the queue: any name of package queues' registry
	// ([FQCoDel], the zero value, [DualPI2], [FIFO], "cake", …), built from
	// its link preset for Rate with LimitPackets, Seed, DisableECN and
	// Params applied (see [queues.Options]), or [PassThrough]. A queue that
	// shapes itself ([queues.Spec.Shapes], CAKE) gets the rate and paces its
	// own output.
	Algorithm Algorithm
	// DisableECN makes an AQM that marks ECN-capable packets drop them
	// instead. It is an error for a queue that cannot turn marking off
	// (DualPI2, CAKE).
	DisableECN bool
	// Params changes settings of the algorithm's own configuration after
	// its preset: comma-separated name=value pairs with the field names of
	// its Config type, as [queues.SetParams] reads them
	// ("target=10ms,interval=200ms" for FQ-CoDel); [queues.Params] lists
	// them. A packet limit set here takes the place of LimitPackets.
	Params string
	// OverheadBytes is added to each packet's size, for the rate and the
	// byte limits: [OverheadIPv4] or [OverheadIPv6] for a WireGuard tunnel
	// over IPv4 or IPv6. Zero counts the inner packet alone. At most 4096.
	OverheadBytes int
	// LimitPackets is the queue's packet limit. Zero means
	// Rate.BufferPackets(0): four round trips of 100 ms at the rate, at
	// least 64 KiB, at most 32 MiB, in full-size packets (the sizing of the
	// library's link presets). At most [MaxLimitPackets]. The wrapper keeps
	// one buffer of MaxPacketBytes for every packet the queue may hold.
	LimitPackets int
	// MaxPacketBytes is the largest packet the device returns, and the size
	// of each buffer the wrapper reads into. Zero means the device's MTU
	// when New is called (1500 if it cannot say), at least 1280. Set it if
	// the MTU may grow later. In [68, 65535].
	MaxPacketBytes int
	// Seed keys the flow hash and the queue's random decisions. Zero, the
	// recommended setting, draws a secret seed from crypto/rand; a fixed
	// seed makes the flow mapping reproducible (tests, simulations) and
	// lets whoever knows it aim hash collisions at a flow.
	Seed uint64
	// Clock is the front's clock; nil means the front's default (a coarse
	// monotonic clock). It must be safe for concurrent use.
	Clock clock.Clock
}

// Validate reports every invalid field in one error that wraps
// [aqm.ErrInvalidConfig]; the queue's own settings (DisableECN, Params) are
// checked as the algorithm checks them, and reported under its package's
// name.
func (c Config) Validate() error {
	_, err := c.queueConfig(1, true)
	return err
}

// queueConfig validates c and returns the queue's configuration (nil for
// PassThrough), with seed as its seed. With build, it also builds the queue
// once, for the algorithm's own validation (New leaves that to building
// the queue it keeps).
func (c Config) queueConfig(seed uint64, build bool) (any, error) {
	var errs []error
	bad := func(field string, value any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "wgtun", Field: field, Value: value, Rule: rule})
	}
	spec, known := c.Algorithm.spec()
	if !known && c.Algorithm != PassThrough {
		bad("Algorithm", c.Algorithm, "must be a name of package queues ("+strings.Join(queues.Names(), ", ")+") or "+string(PassThrough))
	}
	if c.OverheadBytes < 0 || c.OverheadBytes > 4096 {
		bad("OverheadBytes", c.OverheadBytes, "must be in [0, 4096]")
	}
	if c.LimitPackets < 0 || c.LimitPackets > MaxLimitPackets {
		bad("LimitPackets", c.LimitPackets, fmt.Sprintf("must be in [0, %d]", MaxLimitPackets))
	}
	if c.MaxPacketBytes != 0 && (c.MaxPacketBytes < 68 || c.MaxPacketBytes > 65535) {
		bad("MaxPacketBytes", c.MaxPacketBytes, "must be 0 or in [68, 65535]")
	}
	if c.Algorithm == PassThrough {
		for _, f := range []struct {
			name string
			set  bool
			v    any
		}{{"Rate", c.Rate != 0, c.Rate}, {"LimitPackets", c.LimitPackets != 0, c.LimitPackets},
			{"DisableECN", c.DisableECN, c.DisableECN}, {"Params", c.Params != "", c.Params}} {
			if f.set {
				bad(f.name, f.v, "must be zero with "+string(PassThrough)+", which has no queue")
			}
		}
	}
	if !known || len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cfg, err := spec.Config(queues.Options{Rate: c.Rate, LimitPackets: c.limit(), Seed: seed, DisableECN: c.DisableECN, Params: c.Params})
	if err != nil {
		return nil, err
	}
	if build {
		if _, err := queues.FromConfig[uint32](cfg, nil); err != nil {
			return nil, err // the algorithm's own validation
		}
	}
	if n := limitOf(cfg); n < 1 || n > MaxLimitPackets {
		bad("Params", c.Params, fmt.Sprintf("must leave the queue's packet limit in [1, %d], not %d", MaxLimitPackets, n))
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// MaxLimitPackets is the largest packet limit a [Device]'s queue may have:
// the wrapper keeps a buffer for every packet its queue may hold.
const MaxLimitPackets = 1 << 20

// limit is the packet limit given to the queue's preset.
func (c Config) limit() int {
	if c.LimitPackets > 0 {
		return c.LimitPackets
	}
	return c.Rate.BufferPackets(0)
}

// limitOf reads the packet limit of a registry queue's configuration.
func limitOf(cfg any) int {
	for _, p := range queues.Params(cfg) {
		if p.Name == "LimitPackets" {
			n, err := strconv.Atoi(p.Value)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// randomSeed draws a seed from crypto/rand.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return binary.LittleEndian.Uint64(b[:])
}

// splitmix64 is one step of SplitMix64, to derive independent keys from one
// seed.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
