package aqm

import (
	"errors"
	"iter"
	"time"
	"unsafe"
)

// DefaultFIFOLimitPackets is the FIFO's packet limit when FIFOConfig leaves
// it zero: 1000, Linux's default txqueuelen, which pfifo takes as its limit.
const DefaultFIFOLimitPackets = 1000

// MaxFIFOLimitPackets is the largest packet limit a FIFO accepts: 1<<24
// packets, whose storage NewFIFO allocates at once (32 bytes per packet for
// a word-sized payload, so 512 MiB at this limit).
const MaxFIFOLimitPackets = 1 << 24

// FIFOConfig configures a drop-tail (or drop-head) FIFO. The zero value is
// Linux's default pfifo: 1000 packets, no byte limit, tail drop.
//
// A FIFO has no AQM: whatever its limits hold becomes standing queue under
// unresponsive or long-lived traffic. A limit that holds more than a second
// of queue at the link rate is felt as lag by every flow behind it;
// [FIFOConfigForLink] sizes the limits for a given rate.
type FIFOConfig struct {
	// LimitPackets is the most packets the queue holds. Zero means
	// [DefaultFIFOLimitPackets]. Storage for this many packets (rounded up
	// to a power of two) is allocated by NewFIFO, so it must be at most
	// [MaxFIFOLimitPackets].
	LimitPackets int
	// LimitBytes is the most bytes the queue holds (the sum of Size). Zero
	// means no byte limit: the packet limit alone applies (pfifo); set it for
	// a bfifo.
	LimitBytes int
	// HeadDrop makes a full queue drop its oldest packets to admit the new
	// one (Linux pfifo_head_drop) instead of refusing the arrival.
	HeadDrop bool
}

// Validate reports every bad field of c, one [*ConfigError] each, joined;
// each wraps [ErrInvalidConfig]. It does not change c. Zero fields are
// valid: they mean their defaults.
func (c FIFOConfig) Validate() error {
	var errs []error
	if c.LimitPackets < 0 || c.LimitPackets > MaxFIFOLimitPackets {
		errs = append(errs, &ConfigError{"aqm", "LimitPackets", c.LimitPackets, "must be in [0, 16777216]"})
	}
	if c.LimitBytes < 0 {
		errs = append(errs, &ConfigError{"aqm", "LimitBytes", c.LimitBytes, "must not be negative"})
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default set to it.
func (c FIFOConfig) withDefaults() FIFOConfig {
	if c.LimitPackets == 0 {
		c.LimitPackets = DefaultFIFOLimitPackets
	}
	return c
}

// FIFOConfigForLink returns a FIFO configuration for a link of the given
// rate carrying flows of about the given round-trip time (zero means
// [DefaultRTT]): a byte limit of rate.BufferBytes(rtt) and a packet limit
// of rate.BufferPackets(rtt), so that full-size packets fill both at once
// (smaller packets meet the packet limit first). Tail drop.
func FIFOConfigForLink(rate Rate, rtt time.Duration) FIFOConfig {
	return FIFOConfig{
		LimitPackets: min(rate.BufferPackets(rtt), MaxFIFOLimitPackets),
		LimitBytes:   rate.BufferBytes(rtt),
	}
}

// FIFO is the drop-tail baseline the AQM literature compares against: Linux
// pfifo (packet limit), bfifo (byte limit) and pfifo_head_drop (HeadDrop). It
// never drops early and never marks. It is also the reference implementation
// of the [Queue] contract, and a [BatchQueue].
//
// Its memory is one preallocated ring of packets: LimitPackets rounded up
// to a power of two, times the size of a [Packet] (32 bytes for a
// word-sized payload); [FIFO.Detail] reports it.
type FIFO[T any] struct {
	// The ring: buf[head&mask] is the oldest of n packets; len(buf) is a
	// power of two, at least limitPackets (and at least n after a
	// shrinking Reconfigure). Popped slots are cleared, so the garbage
	// collector can reclaim what a payload pointed to.
	buf  []Packet[T]
	mask uint
	head uint
	n    int

	backlog      int
	limitPackets int
	limitBytes   int // 0: none
	headDrop     bool
	onDrop       DropFunc[T]
	stats        Stats
	cfg          FIFOConfig // effective, defaults filled in
}

var (
	_ Queue[int]      = (*FIFO[int])(nil)
	_ BatchQueue[int] = (*FIFO[int])(nil)
)

// NewFIFO returns an empty FIFO. onDrop receives the packets that HeadDrop
// evicts; it may be nil. The error wraps [ErrInvalidConfig] for each bad
// field.
func NewFIFO[T any](cfg FIFOConfig, onDrop DropFunc[T]) (*FIFO[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	q := &FIFO[T]{onDrop: onDrop}
	q.resize(cfg.LimitPackets)
	q.apply(cfg)
	return q, nil
}

func (q *FIFO[T]) apply(cfg FIFOConfig) {
	q.cfg = cfg
	q.limitPackets, q.limitBytes, q.headDrop = cfg.LimitPackets, cfg.LimitBytes, cfg.HeadDrop
}

// resize gives the ring the smallest power-of-two storage that holds
// max(capacity, n) packets, keeping the queued packets in order. It
// allocates only when that size differs from the current one.
func (q *FIFO[T]) resize(capacity int) {
	size := 1
	for size < max(capacity, q.n) {
		size <<= 1
	}
	if size == len(q.buf) {
		return
	}
	buf := make([]Packet[T], size)
	for i := range q.n {
		buf[i] = q.buf[(q.head+uint(i))&q.mask]
	}
	q.buf, q.mask, q.head = buf, uint(size-1), 0
}

// Reconfigure validates cfg and applies it to the queue as it stands: no
// queued packet is dropped, moved or reordered. If the new limits are below
// what is queued now, the packets stay; later arrivals are refused (or, with
// HeadDrop, evict the oldest packets as usual) until the queue is within
// the limits. It allocates when the storage the packet limit needs changes;
// call it off the hot path. On error the queue is unchanged.
func (q *FIFO[T]) Reconfigure(cfg FIFOConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	q.resize(cfg.LimitPackets)
	q.apply(cfg)
	return nil
}

// Config returns the configuration in effect, with every default filled in.
func (q *FIFO[T]) Config() FIFOConfig { return q.cfg }

func (q *FIFO[T]) full(size int) bool {
	return q.n >= q.limitPackets || (q.limitBytes > 0 && q.backlog+size > q.limitBytes)
}

// popFront removes the oldest packet; the queue must not be empty.
func (q *FIFO[T]) popFront() Packet[T] {
	i := q.head & q.mask
	p := q.buf[i]
	q.buf[i] = Packet[T]{}
	q.head++
	q.n--
	q.backlog -= int(p.Size)
	return p
}

// makeRoom is Enqueue's cold path when the queue is full for a packet of
// size bytes: it reports whether room was made, evicting from the head with
// HeadDrop.
func (q *FIFO[T]) makeRoom(size int) bool {
	if q.limitBytes > 0 && size > q.limitBytes {
		return false
	}
	for q.full(size) {
		if !q.headDrop || q.n == 0 {
			return false
		}
		old := q.popFront()
		q.stats.CountDrop(DroppedOverlimit, old.Size, true)
		if q.onDrop != nil {
			q.onDrop(old, DroppedOverlimit)
		}
	}
	return true
}

// Enqueue accepts p at the tail, or refuses it with [DroppedOverlimit] if
// the queue is full (or p alone exceeds LimitBytes). With HeadDrop, a full
// queue instead evicts packets from its head, through the DropFunc, until p
// fits.
func (q *FIFO[T]) Enqueue(p Packet[T], now Time) Verdict {
	q.stats.NoteSize(p.Size)
	size := int(p.Size)
	if q.full(size) && !q.makeRoom(size) {
		q.stats.CountDrop(DroppedOverlimit, p.Size, false)
		return DroppedOverlimit
	}
	p.ECN &= ECNMask
	p.Enqueued = now
	q.buf[(q.head+uint(q.n))&q.mask] = p // room: n < limitPackets ≤ len(buf)
	q.n++
	q.backlog += size
	q.stats.Enqueued.Add(p.Size)
	return Enqueued
}

// EnqueueBatch is [FIFO.Enqueue] for each of ps[:n], n = min(len(ps),
// len(vs)), at now; see [BatchQueue]. Runs of arrivals that fit are stored
// directly; an arrival that meets a full queue is handed to Enqueue.
func (q *FIFO[T]) EnqueueBatch(ps []Packet[T], vs []Verdict, now Time) int {
	n := min(len(ps), len(vs))
	if n == 1 { // a burst of one is a single call: skip the setup
		v := q.Enqueue(ps[0], now)
		vs[0] = v
		if v.Accepted() {
			return 1
		}
		return 0
	}
	ps, vs = ps[:n], vs[:n]
	accepted := 0
	for i := 0; i < n; i++ {
		k := q.enqueueRun(ps[i:], vs[i:], now)
		accepted += k
		if i += k; i == n {
			break
		}
		v := q.Enqueue(ps[i], now) // the queue is full for ps[i]
		vs[i] = v
		if v.Accepted() {
			accepted++
		}
	}
	return accepted
}

// enqueueRun stores the longest prefix of ps that fits in the queue as it
// stands, stamped and with the ECN field masked, sets the verdicts of
// that prefix, and returns its length. vs must be at least as long as ps.
func (q *FIFO[T]) enqueueRun(ps []Packet[T], vs []Verdict, now Time) int {
	buf := q.buf
	mask := uint(len(buf) - 1)
	tail := q.head + uint(q.n)
	// At most lim packets fit, and at most byteRoom bytes; both may be
	// negative after a Reconfigure that shrank the limits.
	lim := min(len(ps), q.limitPackets-q.n)
	byteRoom := int(^uint(0) >> 1)
	if q.limitBytes > 0 {
		byteRoom = q.limitBytes - q.backlog
	}
	byteRoom0 := byteRoom
	maxSize := q.stats.MaxSize
	vs = vs[:len(ps)]
	i := 0
	for ; i < lim; i++ {
		size := ps[i].Size
		if int(size) > byteRoom {
			break
		}
		byteRoom -= int(size)
		maxSize = max(maxSize, size)
		slot := &buf[(tail+uint(i))&mask]
		*slot = ps[i]
		slot.ECN &= ECNMask
		slot.Enqueued = now
		vs[i] = Enqueued
	}
	if i <= 0 {
		return 0
	}
	bytes := byteRoom0 - byteRoom
	q.n += i
	q.backlog += bytes
	q.stats.MaxSize = maxSize
	q.stats.Enqueued.Packets += uint64(i)
	q.stats.Enqueued.Bytes += uint64(bytes)
	return i
}

// Dequeue returns the oldest packet.
func (q *FIFO[T]) Dequeue(now Time) (p Packet[T], ok bool) {
	if q.n == 0 {
		return p, false
	}
	p = q.popFront()
	q.stats.Dequeued.Add(p.Size)
	return p, true
}

// DequeueBatch is [FIFO.Dequeue] up to len(buf) times at now; see
// [BatchQueue].
func (q *FIFO[T]) DequeueBatch(buf []Packet[T], now Time) int {
	k := min(len(buf), q.n)
	if k == 1 { // a burst of one is a single call: skip the setup
		buf[0] = q.popFront()
		q.stats.Dequeued.Add(buf[0].Size)
		return 1
	}
	out := buf[:k]
	ring := q.buf
	h := q.head & uint(len(ring)-1)
	var bytes int
	if k <= 4 || int(h)+k > len(ring) {
		// Few packets, or a run that wraps: one pass, slot by slot.
		for i := range out {
			slot := &ring[h]
			out[i] = *slot
			*slot = Packet[T]{}
			bytes += int(out[i].Size)
			h = (h + 1) & uint(len(ring)-1)
		}
	} else {
		// One contiguous run: bulk copy and clear, then sum the sizes.
		run := ring[h : int(h)+k]
		copy(out, run)
		clear(run)
		for i := range out {
			bytes += int(out[i].Size)
		}
	}
	q.head += uint(k)
	q.n -= k
	q.backlog -= bytes
	q.stats.Dequeued.Packets += uint64(k)
	q.stats.Dequeued.Bytes += uint64(bytes)
	return k
}

// Len returns the number of queued packets.
func (q *FIFO[T]) Len() int { return q.n }

// Backlog returns the number of queued bytes.
func (q *FIFO[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *FIFO[T]) Stats() Stats {
	s := q.stats
	s.Len, s.Backlog = q.n, q.backlog
	return s
}

// FIFODetail is the FIFO-specific state of a [FIFO].
type FIFODetail struct {
	// MemoryBytes is the memory the FIFO's packet ring takes: its slots
	// (LimitPackets rounded up to a power of two) times the size of one
	// packet.
	MemoryBytes int
}

// Detail returns a snapshot of the FIFO-specific state.
func (q *FIFO[T]) Detail() FIFODetail {
	return FIFODetail{MemoryBytes: len(q.buf) * int(unsafe.Sizeof(Packet[T]{}))}
}

// Metrics lists d's values: memory_bytes, a gauge.
func (d FIFODetail) Metrics() iter.Seq[Metric] {
	return func(yield func(Metric) bool) {
		yield(Metric{"memory_bytes", Gauge, float64(d.MemoryBytes)})
	}
}
