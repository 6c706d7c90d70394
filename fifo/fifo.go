package fifo

import (
	"errors"
	"iter"
	"strconv"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// defaultLimitPackets is the FIFO's packet limit when Config leaves
// it zero: 1000, Linux's default txqueuelen, which pfifo takes as its limit.
const defaultLimitPackets = 1000

// maxLimitPackets is the largest packet limit a FIFO accepts: 1<<24
// packets, whose storage New allocates at once (32 bytes per packet for
// a word-sized payload, so 512 MiB at this limit).
const maxLimitPackets = 1 << 24

// Config configures a drop-tail (or drop-head) FIFO. The zero value is
// Linux's default pfifo: 1000 packets, no byte limit, tail drop.
//
// A FIFO has no AQM: whatever its limits hold becomes standing queue under
// unresponsive or long-lived traffic. A limit that holds more than a second
// of queue at the link rate is felt as lag by every flow behind it;
// [ConfigForLink] sizes the limits for a given rate.
type Config struct {
	// LimitPackets is the most packets the queue holds. Zero means
	// [defaultLimitPackets]. Storage for this many packets (rounded up
	// to a power of two) is allocated by New, so it must be at most
	// 16777216.
	LimitPackets int
	// LimitBytes is the most bytes the queue holds (the sum of Size). Zero
	// means no byte limit: the packet limit alone applies (pfifo); set it for
	// a bfifo.
	LimitBytes int
	// HeadDrop makes a full queue drop its oldest packets to admit the new
	// one (Linux pfifo_head_drop) instead of refusing the arrival.
	HeadDrop bool
}

// Validate reports every bad field of c, one [*aqm.ConfigError] each, joined;
// each wraps [aqm.ErrInvalidConfig]. It does not change c. Zero fields are
// valid: they mean their defaults.
func (c Config) Validate() error {
	var errs []error
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		errs = append(errs, &aqm.ConfigError{Pkg: "fifo", Field: "LimitPackets", Value: c.LimitPackets, Rule: "must be in [0, " + strconv.FormatUint(uint64(maxLimitPackets), 10) + "]"})
	}
	if c.LimitBytes < 0 {
		errs = append(errs, &aqm.ConfigError{Pkg: "fifo", Field: "LimitBytes", Value: c.LimitBytes, Rule: "must not be negative"})
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	if c.LimitPackets == 0 {
		c.LimitPackets = defaultLimitPackets
	}
	return c
}

// ConfigForLink returns a FIFO configuration for a link of the given
// rate carrying flows of about the given round-trip time (zero means
// 100 ms): a byte limit of rate.BufferBytes(rtt) and a packet limit
// of rate.BufferPackets(rtt), so that full-size packets fill both at once
// (smaller packets meet the packet limit first). Tail drop. A zero rate
// (unknown or unlimited) gives the zero Config: the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		LimitPackets: min(rate.BufferPackets(rtt), maxLimitPackets),
		LimitBytes:   rate.BufferBytes(rtt),
	}
}

// Queue is the drop-tail baseline the AQM literature compares against: Linux
// pfifo (packet limit), bfifo (byte limit) and pfifo_head_drop (HeadDrop). It
// never drops early and never marks. It is also the reference implementation
// of the [aqm.Queue] contract, and a [aqm.BatchQueue].
//
// Its memory is one preallocated ring of packets: LimitPackets rounded up
// to a power of two, times the size of a [aqm.Packet] (32 bytes for a
// word-sized payload); [Queue.Detail] reports it.
type Queue[T any] struct {
	// The ring: buf[head&mask] is the oldest of n packets; len(buf) is a
	// power of two, at least limitPackets (and at least n after a
	// shrinking Reconfigure). Popped slots are cleared, so the garbage
	// collector can reclaim what a payload pointed to.
	buf  []aqm.Packet[T]
	mask uint
	head uint
	n    int
	segs int // wire packets queued: the n packets' segments, n ≤ segs

	backlog      int
	limitPackets int
	limitBytes   int // 0: none
	headDrop     bool
	onDrop       aqm.DropFunc[T]
	stats        aqm.Stats
	cfg          Config // effective, defaults filled in
}

var (
	_ aqm.Queue[int]      = (*Queue[int])(nil)
	_ aqm.BatchQueue[int] = (*Queue[int])(nil)
)

// New returns an empty FIFO. onDrop receives the packets that HeadDrop
// evicts; it may be nil. The error wraps [aqm.ErrInvalidConfig] for each bad
// field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	q := &Queue[T]{onDrop: onDrop}
	q.resize(cfg.LimitPackets)
	q.apply(cfg)
	return q, nil
}

func (q *Queue[T]) apply(cfg Config) {
	q.cfg = cfg
	q.limitPackets, q.limitBytes, q.headDrop = cfg.LimitPackets, cfg.LimitBytes, cfg.HeadDrop
}

// resize gives the ring the smallest power-of-two storage that holds
// max(capacity, n) packets, keeping the queued packets in order. It
// allocates only when that size differs from the current one.
func (q *Queue[T]) resize(capacity int) {
	size := 1
	for size < max(capacity, q.n) {
		size <<= 1
	}
	if size == len(q.buf) {
		return
	}
	buf := make([]aqm.Packet[T], size)
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
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	q.resize(cfg.LimitPackets)
	q.apply(cfg)
	return nil
}

// Config returns the configuration in effect, with every default filled in.
func (q *Queue[T]) Config() Config { return q.cfg }

// full reports whether a packet of size bytes and segs segments does not
// fit as the queue stands.
func (q *Queue[T]) full(size, segs int) bool {
	return q.segs+segs > q.limitPackets || (q.limitBytes > 0 && q.backlog+size > q.limitBytes)
}

// popFront removes the oldest packet; the queue must not be empty.
func (q *Queue[T]) popFront() aqm.Packet[T] {
	i := q.head & q.mask
	p := q.buf[i]
	q.buf[i] = aqm.Packet[T]{}
	q.head++
	q.n--
	q.segs -= p.SegmentCount()
	q.backlog -= int(p.Size)
	return p
}

// makeRoom is Enqueue's cold path when the queue is full for a packet of
// size bytes and segs segments: it reports whether room was made, evicting
// from the head with HeadDrop. A packet larger than a limit on its own is
// refused without evicting anything.
func (q *Queue[T]) makeRoom(size, segs int) bool {
	if (q.limitBytes > 0 && size > q.limitBytes) || segs > q.limitPackets {
		return false
	}
	for q.full(size, segs) {
		if !q.headDrop || q.n == 0 {
			return false
		}
		old := q.popFront()
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, old.Meta, true)
		if q.onDrop != nil {
			q.onDrop(old, aqm.DroppedOverlimit)
		}
	}
	return true
}

// Enqueue accepts p at the tail, or refuses it with [aqm.DroppedOverlimit] if
// the queue is full (or p alone exceeds LimitBytes). With HeadDrop, a full
// queue instead evicts packets from its head, through the DropFunc, until p
// fits.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	tally.NoteSize(&q.stats, p.Size)
	size, segs := int(p.Size), p.SegmentCount()
	if q.full(size, segs) && !q.makeRoom(size, segs) {
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	q.buf[(q.head+uint(q.n))&q.mask] = p // room: n < segs ≤ limitPackets ≤ len(buf)
	q.n++
	q.segs += segs
	q.backlog += size
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// EnqueueBatch is [Queue.Enqueue] for each of ps[:n], n = min(len(ps),
// len(vs)), at now; see [aqm.BatchQueue]. Runs of arrivals that fit are stored
// directly; an arrival that meets a full queue is handed to Enqueue.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
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
func (q *Queue[T]) enqueueRun(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	buf := q.buf
	mask := uint(len(buf) - 1)
	tail := q.head + uint(q.n)
	// At most segRoom wire packets fit, and at most byteRoom bytes; both
	// may be negative after a Reconfigure that shrank the limits. Every
	// packet takes at least one segment of room, so at most segRoom
	// packets fit, and the ring holds them.
	segRoom := q.limitPackets - q.segs
	lim := min(len(ps), segRoom)
	byteRoom := int(^uint(0) >> 1)
	if q.limitBytes > 0 {
		byteRoom = q.limitBytes - q.backlog
	}
	byteRoom0 := byteRoom
	maxSize := q.stats.MaxSize
	vs = vs[:len(ps)]
	i := 0
	segRoom0 := segRoom
	for ; i < lim; i++ {
		size, segs := ps[i].Size, ps[i].SegmentCount()
		if int(size) > byteRoom || segs > segRoom {
			break
		}
		byteRoom -= int(size)
		segRoom -= segs
		maxSize = max(maxSize, size)
		slot := &buf[(tail+uint(i))&mask]
		*slot = ps[i]
		slot.ECN &= aqm.ECNMask
		slot.Enqueued = now
		vs[i] = aqm.Enqueued
	}
	if i <= 0 {
		return 0
	}
	bytes, segs := byteRoom0-byteRoom, segRoom0-segRoom
	q.n += i
	q.segs += segs
	q.backlog += bytes
	q.stats.MaxSize = maxSize
	q.stats.Enqueued.Packets += uint64(segs)
	q.stats.Enqueued.Bytes += uint64(bytes)
	return i
}

// Dequeue returns the oldest packet.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.n == 0 {
		return p, false
	}
	p = q.popFront()
	q.stats.Dequeued.AddMeta(p.Meta)
	return p, true
}

// DequeueBatch is [Queue.Dequeue] up to len(buf) times at now; see
// [aqm.BatchQueue].
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	k := min(len(buf), q.n)
	if k == 1 { // a burst of one is a single call: skip the setup
		buf[0] = q.popFront()
		q.stats.Dequeued.AddMeta(buf[0].Meta)
		return 1
	}
	out := buf[:k]
	ring := q.buf
	h := q.head & uint(len(ring)-1)
	var bytes, segs int
	if k <= 4 || int(h)+k > len(ring) {
		// Few packets, or a run that wraps: one pass, slot by slot.
		for i := range out {
			slot := &ring[h]
			out[i] = *slot
			*slot = aqm.Packet[T]{}
			bytes += int(out[i].Size)
			segs += out[i].SegmentCount()
			h = (h + 1) & uint(len(ring)-1)
		}
	} else {
		// One contiguous run: bulk copy and clear, then sum the sizes.
		run := ring[h : int(h)+k]
		copy(out, run)
		clear(run)
		for i := range out {
			bytes += int(out[i].Size)
			segs += out[i].SegmentCount()
		}
	}
	q.head += uint(k)
	q.n -= k
	q.segs -= segs
	q.backlog -= bytes
	q.stats.Dequeued.Packets += uint64(segs)
	q.stats.Dequeued.Bytes += uint64(bytes)
	return k
}

// Len returns the number of queued wire packets: a GSO super-packet counts
// as its segments.
func (q *Queue[T]) Len() int { return q.segs }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.segs, q.backlog
	return s
}

// Detail is the FIFO-specific state of a [Queue].
type Detail struct {
	// MemoryBytes is the memory the FIFO's packet ring takes: its slots
	// (LimitPackets rounded up to a power of two) times the size of one
	// packet.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// Detail returns a snapshot of the FIFO-specific state.
func (q *Queue[T]) Detail() Detail {
	return Detail{MemoryBytes: len(q.buf) * int(unsafe.Sizeof(aqm.Packet[T]{}))}
}

// metrics lists d's values: memory_bytes, a gauge.
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }
