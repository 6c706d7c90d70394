package wgtun

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fq"
)

// Algorithm names the queue a [Device] puts on the packets it reads.
type Algorithm uint8

const (
	// FQCoDel is FQ-CoDel (RFC 8290): one CoDel queue per flow, served
	// round robin, so a sparse flow never waits behind a bulk one.
	FQCoDel Algorithm = iota
	// DualPI2 is the DualQ Coupled AQM (RFC 9332): a shallow queue for
	// L4S traffic (ECT(1) and CE) coupled to a PI2 queue for the rest.
	DualPI2
)

// String returns "fq-codel" or "dualpi2".
func (a Algorithm) String() string {
	switch a {
	case FQCoDel:
		return "fq-codel"
	case DualPI2:
		return "dualpi2"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
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
	// or the network. Zero means unlimited: packets then wait only while
	// the caller of Read is slower than the device. It can be changed with
	// [Device.SetRate].
	Rate aqm.Rate
	// Algorithm is the queue: [FQCoDel] (the zero value) or [DualPI2].
	Algorithm Algorithm
	// OverheadBytes is added to each packet's size, for the rate and the
	// byte limits: [OverheadIPv4] or [OverheadIPv6] for a WireGuard tunnel
	// over IPv4 or IPv6. Zero counts the inner packet alone. At most 4096.
	OverheadBytes int
	// LimitPackets is the queue's packet limit. Zero means
	// Rate.BufferPackets(0): four round trips of 100 ms at the rate, at
	// least 64 KiB, at most 32 MiB, in full-size packets (the sizing of the
	// library's link presets). At most 1<<20. The wrapper keeps one buffer
	// of MaxPacketBytes for every packet the queue may hold.
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
// [aqm.ErrInvalidConfig].
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("wgtun: "+format+": %w", append(args, aqm.ErrInvalidConfig)...))
	}
	if c.Algorithm > DualPI2 {
		bad("Algorithm (%d) must be FQCoDel (0) or DualPI2 (1)", uint8(c.Algorithm))
	}
	if c.OverheadBytes < 0 || c.OverheadBytes > 4096 {
		bad("OverheadBytes (%d) must be in [0, 4096]", c.OverheadBytes)
	}
	if c.LimitPackets < 0 || c.LimitPackets > 1<<20 {
		bad("LimitPackets (%d) must be in [0, %d]", c.LimitPackets, 1<<20)
	}
	if c.MaxPacketBytes != 0 && (c.MaxPacketBytes < 68 || c.MaxPacketBytes > 65535) {
		bad("MaxPacketBytes (%d) must be 0 or in [68, 65535]", c.MaxPacketBytes)
	}
	return errors.Join(errs...)
}

// limit is the effective packet limit.
func (c Config) limit() int {
	if c.LimitPackets > 0 {
		return c.LimitPackets
	}
	return c.Rate.BufferPackets(0)
}

// newQueue builds the configured queue with the limits sized for the rate.
func (c Config) newQueue(seed uint64, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
	limit := c.limit()
	if c.Algorithm == DualPI2 {
		return dualq.New(dualq.Config{LimitPackets: limit, Seed: seed}, onDrop)
	}
	// FQ-CoDel also bounds the bytes queued (sizes include the overhead):
	// the preset's buffer, or the packet limit in full-size packets if
	// that is larger.
	mem := max(c.Rate.BufferBytes(0), limit*aqm.FullPacketBytes)
	return fq.NewCoDel(fq.CoDelConfig{LimitPackets: limit, MemoryLimitBytes: min(mem, 1<<31), Seed: seed}, onDrop)
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
