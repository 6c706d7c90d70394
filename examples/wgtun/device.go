package wgtun

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"sync"
	"sync/atomic"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
	"github.com/aqmkit/aqmkit/queues"
)

// readOffset is the offset at which the wrapper reads packets into its
// buffers: wireguard-go's own (the size of its transport header). The BSD
// and macOS devices write a 4-byte header just before the offset they are
// given, so it must not be zero.
const readOffset = 16

var (
	_ tun.Device       = (*Device)(nil)
	_ aqm.MetricSource = (*Device)(nil)
)

// ErrNilDevice is returned by [New] for a nil device.
var ErrNilDevice = errors.New("wgtun: the device is nil")

// VirtioNetHdrBytes is the size of the virtio-net header a Linux TUN
// device with offloads (IFF_VNET_HDR: wireguard-go's, whose BatchSize is
// then above 1) writes before each packet it is given: [Device.Write] needs
// at least this offset on such a device.
const VirtioNetHdrBytes = 10

// ErrWriteOffset is returned (wrapped, with the offset) by [Device.Write]
// for an offset the device cannot write at.
var ErrWriteOffset = errors.New("wgtun: write offset too small")

// Device wraps a [tun.Device] and puts an AQM, at a rate, on the packets
// read from it. It is itself a tun.Device.
type Device struct {
	inner    tun.Device
	front    *front.Front[uint32] // nil for PassThrough
	shapes   bool                 // the queue paces itself at the rate (CAKE)
	hasher   iphdr.Hasher
	overhead uint32
	batches  bool // the device returns more than one packet per read (offloads)

	// devMu is held by whoever reads the device, the reader goroutine or
	// a Read on the direct path, from the read until the burst is in the
	// queue, so that bursts enter the queue in the order they were read.
	devMu chanMutex
	// The mode: unshaped, Read reads the device itself while the queue is
	// empty (the direct path) and the reader goroutine waits on wake;
	// shaped, the reader goroutine reads and Read waits on the front with
	// shapedCtx, which ends when the mode becomes direct.
	modeMu       sync.Mutex
	direct       atomic.Bool
	shapedCtx    context.Context
	cancelShaped context.CancelFunc
	wake         chan struct{} // buffered: the mode became shaped
	stop         chan struct{} // closed by Close

	// Packet buffers: slot s is slab[s*slot : s*slot+slot], holding a packet
	// of lens[s] bytes at readOffset. A slot belongs to exactly one of the
	// pool, the reader goroutine, the queue, or a Read call. On the direct
	// path a slot's packet may be in the caller's buffer at[s] instead,
	// until it leaves or is moved into the slot (keep).
	slab []byte
	slot int // readOffset + the largest packet
	lens []uint32
	pool pool

	// The reader goroutine's state.
	rbufs  [][]byte
	rsizes []int
	rslots []uint32
	rpos   []int // rpos[j]: the read slot of rps[j]
	rps    []aqm.Packet[uint32]
	rvs    []aqm.Verdict
	rfresh []uint32

	// The consumer's state, under readMu.
	readMu sync.Mutex
	cps    []aqm.Packet[uint32]
	cin    []aqm.Packet[uint32] // the direct path's burst
	cvs    []aqm.Verdict
	cslots []uint32
	cfree  []uint32
	cbufs  [][]byte
	csizes []int
	at     []int32 // at[s]: the caller's buffer holding slot s's packet on the direct path

	closing   atomic.Bool
	fatal     atomic.Pointer[error] // the device's read error that ended the reader
	done      chan struct{}         // closed when the reader goroutine ends
	closeOnce sync.Once
	closeErr  error

	readPackets     atomic.Uint64
	tooManySegments atomic.Uint64
	unparsed        atomic.Uint64
	shortBuffer     atomic.Uint64
	directReads     atomic.Uint64
	copied          atomic.Uint64
}

// New wraps dev and starts the goroutine that reads from it while the
// wrapper is shaped (none with PassThrough); [Device.Close] stops it. New
// returns cfg's validation error if cfg is invalid.
func New(dev tun.Device, cfg Config) (*Device, error) {
	if dev == nil {
		return nil, ErrNilDevice
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = randomSeed()
	}
	k0, k1, qseed := splitmix64(&seed), splitmix64(&seed), splitmix64(&seed)
	qcfg, err := cfg.queueConfig(qseed, false)
	if err != nil {
		return nil, err
	}
	batch := max(min(dev.BatchSize(), MaxBatch), 1)
	d := &Device{
		devMu:    make(chanMutex, 1),
		inner:    dev,
		hasher:   iphdr.NewHasherWithKey(k0, k1),
		overhead: uint32(cfg.OverheadBytes),
		batches:  dev.BatchSize() > 1,
		done:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	if qcfg == nil { // PassThrough
		close(d.done)
		return d, nil
	}
	maxPacket := cfg.MaxPacketBytes
	if maxPacket == 0 {
		maxPacket = 1500
		if mtu, err := dev.MTU(); err == nil && mtu > 0 {
			maxPacket = min(mtu, 65535)
		}
		maxPacket = max(maxPacket, 1280)
	}
	d.slot = readOffset + maxPacket
	// Every slot is somewhere: at most limit in the queue, batch with the
	// reader, MaxBatch in a Read call; the reader never waits for one.
	slots := limitOf(qcfg) + batch + MaxBatch
	d.slab = make([]byte, slots*d.slot)
	d.lens = make([]uint32, slots)
	d.at = make([]int32, slots)
	d.pool.init(slots)

	q, err := queues.FromConfig(qcfg, d.release)
	if err != nil {
		return nil, err
	}
	spec, _ := cfg.Algorithm.spec()
	d.shapes = spec.Shapes
	frontRate := cfg.Rate
	if d.shapes {
		frontRate = 0 // the queue paces itself at cfg.Rate
	}
	d.front, err = front.New(q, cfg.Clock, front.Config{Rate: frontRate})
	if err != nil {
		return nil, err
	}
	d.setMode(cfg.Rate)

	d.rbufs = make([][]byte, batch)
	d.rsizes = make([]int, batch)
	d.rslots = make([]uint32, batch)
	d.rpos = make([]int, batch)
	d.rps = make([]aqm.Packet[uint32], batch)
	d.rvs = make([]aqm.Verdict, batch)
	d.rfresh = make([]uint32, batch)
	d.pool.get(d.rslots)
	for i, s := range d.rslots {
		d.rbufs[i] = d.buf(s)
	}
	d.cps = make([]aqm.Packet[uint32], MaxBatch)
	d.cin = make([]aqm.Packet[uint32], MaxBatch)
	d.cvs = make([]aqm.Verdict, MaxBatch)
	d.cslots = make([]uint32, MaxBatch)
	d.cfree = make([]uint32, 0, MaxBatch)
	d.cbufs = make([][]byte, MaxBatch)
	d.csizes = make([]int, MaxBatch)

	go d.readLoop()
	return d, nil
}

// setMode makes the wrapper direct (Read reads the device itself while the
// queue is empty) at rate zero, unless the queue paces itself, and shaped
// otherwise.
func (d *Device) setMode(rate aqm.Rate) {
	d.modeMu.Lock()
	defer d.modeMu.Unlock()
	direct := rate == 0 && !d.shapes
	if d.shapedCtx != nil && direct == d.direct.Load() {
		return
	}
	d.direct.Store(direct)
	if direct {
		if d.cancelShaped != nil {
			d.cancelShaped() // a Read waiting on the front looks again
		}
		return
	}
	d.shapedCtx, d.cancelShaped = context.WithCancel(context.Background())
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// pkt returns the packet in slot s.
func (d *Device) pkt(s uint32) []byte {
	o := int(s)*d.slot + readOffset
	return d.slab[o : o+int(d.lens[s])]
}

// buf returns slot s's whole buffer.
func (d *Device) buf(s uint32) []byte {
	o := int(s) * d.slot
	return d.slab[o : o+d.slot : o+d.slot]
}

// release is the queue's DropFunc: a dropped packet's slot goes back to the
// pool.
func (d *Device) release(p aqm.Packet[uint32], _ aqm.Verdict) { d.pool.put(p.Payload) }

// readLoop reads bursts from the device and offers each to the front,
// while the wrapper is shaped, until the device fails or the wrapper is
// closed. While it is direct, it waits.
func (d *Device) readLoop() {
	defer close(d.done)
	for {
		if d.direct.Load() && !d.closing.Load() {
			select {
			case <-d.wake:
			case <-d.stop:
				return
			}
			continue
		}
		d.devMu.Lock()
		if d.direct.Load() && !d.closing.Load() {
			d.devMu.Unlock() // the mode changed meanwhile
			continue
		}
		end := d.closing.Load() || d.readBurst()
		d.devMu.Unlock()
		if end {
			return
		}
	}
}

// readBurst reads one burst from the device into the reader's slots and
// offers it to the front; it reports whether the reader must end (the
// wrapper is closed or the device failed).
func (d *Device) readBurst() bool {
	n, err := d.inner.Read(d.rbufs, d.rsizes, readOffset)
	n = max(min(n, len(d.rbufs)), 0)
	k := 0
	for i := range n {
		sz := d.rsizes[i]
		if sz < 1 || sz > d.slot-readOffset {
			continue
		}
		s := d.rslots[i]
		d.lens[s] = uint32(sz)
		d.rps[k] = aqm.Packet[uint32]{Payload: s, Meta: d.meta(d.pkt(s))}
		d.rpos[k] = i
		k++
	}
	d.readPackets.Add(uint64(k))
	if k > 0 {
		acc, ferr := d.front.EnqueueBatch(d.rps[:k], d.rvs[:k])
		// Accepted slots now belong to the queue: replace them.
		// Refused ones stay with the reader, to be read into again.
		if acc > 0 {
			fresh := d.rfresh[:acc]
			if !d.pool.get(fresh) {
				return true
			}
			for j := range k {
				if d.rvs[j].Accepted() {
					i := d.rpos[j]
					d.rslots[i], fresh = fresh[0], fresh[1:]
					d.rbufs[i] = d.buf(d.rslots[i])
				}
			}
		}
		if ferr != nil {
			return true // closed
		}
	}
	if err != nil {
		if errors.Is(err, tun.ErrTooManySegments) {
			d.tooManySegments.Add(1) // the rest of a GSO burst was lost; read on
			return false
		}
		d.fail(err)
		return true
	}
	return false
}

// meta classifies a packet: keyed flow hash, ECN, size plus the overhead.
func (d *Device) meta(pkt []byte) aqm.Meta {
	m, err := d.hasher.Meta(pkt)
	if err != nil {
		d.unparsed.Add(1) // queued all the same, as Not-ECT
	}
	m.Size += d.overhead
	return m
}

// fail records the device's read error, unless the wrapper is closing, and
// closes the front, so that Read drains the queue and then reports it.
func (d *Device) fail(err error) {
	if !d.closing.Load() {
		fatal := err // a copy, so that err does not escape on every read
		d.fatal.Store(&fatal)
		d.front.Close()
	}
}

// closedErr is what Read returns once the front is closed and empty.
func (d *Device) closedErr() error {
	if e := d.fatal.Load(); e != nil && !d.closing.Load() {
		return *e
	}
	return os.ErrClosed
}

// Read is [tun.Device.Read]: it blocks until the rate lets a packet leave,
// then puts up to min(len(bufs), len(sizes), [MaxBatch]) packets that may
// leave now in bufs[i][offset:], setting CE in the header of each packet
// the AQM marked, and sets sizes[i]. A packet that does not fit in its
// buffer is dropped (counted as wgtun_dropped_short_buffer_packets). Once
// the wrapper is closed it returns an error matching [os.ErrClosed]; if the
// device failed, it returns the device's error after the queued packets.
// Concurrent calls are serialised (wireguard-go reads from one goroutine).
//
// Unshaped (at rate zero, with a queue that does not pace itself), a Read
// that finds the queue empty reads the device itself: the burst goes
// through the queue at one instant, so the AQM sees and counts every
// packet at a sojourn of zero, and when the queue hands the packets back in
// the order they were read (a burst of one flow, or any burst through a
// FIFO) they stay where the device put them, in bufs, without a copy. This
// needs an offset of at least 16 (wireguard-go's) and buffers of at least
// offset+MaxPacketBytes bytes; otherwise the device is read into the
// wrapper's buffers and the packets copied. A queue with a backlog is
// always drained first, in order.
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if offset < 0 {
		return 0, errors.New("wgtun: negative offset")
	}
	n := min(len(bufs), len(sizes), MaxBatch)
	if n == 0 {
		return 0, nil
	}
	if d.front == nil {
		return d.readPassThrough(bufs[:n], sizes[:n], offset)
	}
	d.readMu.Lock()
	defer d.readMu.Unlock()
	for {
		d.modeMu.Lock()
		direct, ctx := d.direct.Load(), d.shapedCtx
		d.modeMu.Unlock()
		if direct {
			d.devMu.Lock()
			if d.front.Len() == 0 && !d.front.Detail().Closed {
				out, err := d.readDirect(bufs[:n], sizes[:n], offset)
				d.devMu.Unlock()
				if out > 0 || err != nil {
					return out, err
				}
				continue
			}
			d.devMu.Unlock()
			// A backlog, left from a shaped period or by a failed device:
			// it leaves first.
			k, _ := d.front.TryDequeueBatch(d.cps[:n])
			if k == 0 && d.front.Detail().Closed && d.front.Len() == 0 {
				return 0, d.closedErr()
			}
			if out := d.copyOut(d.cps[:k], bufs, sizes, offset); out > 0 {
				return out, nil
			}
			continue
		}
		k, err := d.front.DequeueBatch(ctx, d.cps[:n])
		if err != nil {
			if ctx.Err() != nil {
				continue // the wrapper became direct
			}
			return 0, d.closedErr()
		}
		if out := d.copyOut(d.cps[:k], bufs, sizes, offset); out > 0 {
			return out, nil
		}
	}
}

// copyOut copies the packets ps, dequeued from the front, from their slots
// to bufs[i][offset:], setting CE where the AQM marked, returns their slots
// to the pool and returns how many it copied.
func (d *Device) copyOut(ps []aqm.Packet[uint32], bufs [][]byte, sizes []int, offset int) int {
	out := 0
	for _, p := range ps {
		pkt := d.pkt(p.Payload)
		if p.ECN == aqm.CE {
			_ = iphdr.SetCE(pkt) // marked only if ECN-capable; a CE packet stays CE
		}
		b := bufs[out]
		if offset > len(b) || len(b)-offset < len(pkt) {
			d.shortBuffer.Add(1)
			continue
		}
		sizes[out] = copy(b[offset:], pkt)
		out++
	}
	d.pool.putPackets(ps)
	d.copied.Add(uint64(out))
	return out
}

// readDirect is Read's direct path, called with devMu held on an empty,
// open, unshaped queue: it reads one burst from the device (into bufs when
// they can take it, else into the wrapper's slots), offers it to the front
// and takes back what may leave at once.
func (d *Device) readDirect(bufs [][]byte, sizes []int, offset int) (int, error) {
	n := len(bufs)
	slots := d.cslots[:n]
	if !d.pool.get(slots) {
		return 0, os.ErrClosed
	}
	d.directReads.Add(1)
	inPlace := offset >= readOffset
	for _, b := range bufs {
		if len(b)-offset < d.slot-readOffset {
			inPlace = false
			break
		}
	}
	rb, roff := bufs, offset
	if !inPlace {
		rb, roff = d.cbufs[:n], readOffset
		for i, s := range slots {
			rb[i] = d.buf(s)
		}
	}
	k, rerr := d.inner.Read(rb, d.csizes[:n], roff)
	k = max(min(k, n), 0)
	m := 0
	for i := range k {
		sz := d.csizes[i]
		if sz < 1 || sz > d.slot-readOffset {
			continue
		}
		s := slots[i]
		d.lens[s] = uint32(sz)
		d.at[s] = int32(i)
		d.cin[m] = aqm.Packet[uint32]{Payload: s, Meta: d.meta(rb[i][roff : roff+sz])}
		m++
	}
	d.readPackets.Add(uint64(m))
	var acc int
	var ferr error
	if m > 0 {
		acc, ferr = d.front.EnqueueBatch(d.cin[:m], d.cvs[:m])
	}
	// The slots the queue did not take go back to the pool.
	free := d.cfree[:0]
	j := 0
	for i := range n {
		if j < m && d.cin[j].Payload == slots[i] {
			if !d.cvs[j].Accepted() || ferr != nil {
				free = append(free, slots[i])
			}
			j++
			continue
		}
		free = append(free, slots[i])
	}
	d.pool.putSlots(free)

	out := 0
	if acc > 0 && ferr == nil {
		q, _ := d.front.TryDequeueBatch(d.cps[:n])
		ps := d.cps[:q]
		same := inPlace
		for j, p := range ps {
			same = same && d.at[p.Payload] == int32(j)
		}
		switch {
		case same:
			// The packets are where Read returns them.
			for j, p := range ps {
				if p.ECN == aqm.CE {
					_ = iphdr.SetCE(bufs[j][offset : offset+int(d.lens[p.Payload])])
				}
				sizes[j] = int(d.lens[p.Payload])
			}
			if d.front.Len() > 0 {
				d.keep(d.cin[:m], bufs, offset) // some still queued: into their slots
			}
			d.pool.putPackets(ps)
			out = q
		case inPlace:
			// Reordered, by a fair queue: move the packets into their
			// slots, then out in the queue's order. Packets the queue
			// dropped meanwhile are copied too, into slots nobody else
			// takes while devMu is held.
			d.keep(d.cin[:m], bufs, offset)
			out = d.copyOut(ps, bufs, sizes, offset)
		default:
			out = d.copyOut(ps, bufs, sizes, offset)
		}
	}
	switch {
	case ferr != nil:
		return 0, d.closedErr()
	case rerr == nil:
	case errors.Is(rerr, tun.ErrTooManySegments):
		d.tooManySegments.Add(1)
	default:
		d.fail(rerr)
		if out == 0 {
			return 0, d.closedErr()
		}
	}
	return out, nil
}

// keep copies the packets ps, read by the direct path into bufs, into
// their own slots, so that they can stay in the queue after Read returns.
func (d *Device) keep(ps []aqm.Packet[uint32], bufs [][]byte, offset int) {
	for _, p := range ps {
		s := p.Payload
		copy(d.buf(s)[readOffset:], bufs[d.at[s]][offset:offset+int(d.lens[s])])
	}
}

// readPassThrough is Read for PassThrough: the device's own read, counted.
func (d *Device) readPassThrough(bufs [][]byte, sizes []int, offset int) (int, error) {
	n, err := d.inner.Read(bufs, sizes, offset)
	if n > 0 {
		d.readPackets.Add(uint64(n))
	}
	if err != nil && errors.Is(err, tun.ErrTooManySegments) {
		d.tooManySegments.Add(1)
		if n > 0 {
			err = nil
		}
	}
	return n, err
}

// Write passes the packets through to the device unchanged. On a device
// that batches (a Linux TUN with offloads, which writes a virtio-net header
// before each packet) offset must be at least [VirtioNetHdrBytes]; an
// offset the device cannot write at, or one past the end of a buffer, is
// refused with an error that wraps [ErrWriteOffset], and nothing is
// written. wireguard-go writes at 16.
func (d *Device) Write(bufs [][]byte, offset int) (int, error) {
	if offset < 0 || d.batches && offset < VirtioNetHdrBytes {
		return 0, fmt.Errorf("%w: %d, but a device that batches packets (a Linux TUN with offloads) needs at least %d bytes before each packet for its virtio-net header",
			ErrWriteOffset, offset, VirtioNetHdrBytes)
	}
	for i, b := range bufs {
		if offset > len(b) {
			return 0, fmt.Errorf("%w: %d is past the end of buffer %d (%d bytes)", ErrWriteOffset, offset, i, len(b))
		}
	}
	return d.inner.Write(bufs, offset)
}

// File returns the device's file.
func (d *Device) File() *os.File { return d.inner.File() }

// MTU returns the device's MTU.
func (d *Device) MTU() (int, error) { return d.inner.MTU() }

// Name returns the device's name.
func (d *Device) Name() (string, error) { return d.inner.Name() }

// Events returns the device's event channel.
func (d *Device) Events() <-chan tun.Event { return d.inner.Events() }

// BatchSize returns the device's batch size.
func (d *Device) BatchSize() int { return d.inner.BatchSize() }

// Close refuses further packets, discards the queued ones, closes the
// device, waits for the reading goroutine to end, and wakes a blocked Read,
// which returns [os.ErrClosed]. It returns the device's Close error.
// Close is idempotent.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		d.closing.Store(true)
		if d.front != nil {
			d.front.Close()
			d.front.Flush(d.release)
			d.pool.close()
			close(d.stop)
		}
		d.closeErr = d.inner.Close()
		<-d.done
	})
	return d.closeErr
}

// SetRate changes the rate at runtime (zero: unlimited). A queue that
// paces itself (CAKE) takes the rate itself. It has no effect with
// PassThrough. It returns the queue's or the front's error, if one refused
// the rate; a *Device is an autorate.Setter.
func (d *Device) SetRate(r aqm.Rate) error {
	if d.front == nil {
		return nil
	}
	if d.shapes {
		var err error
		d.front.WithQueue(func(q aqm.Queue[uint32]) {
			if p, ok := q.(interface{ SetRate(aqm.Rate) error }); ok {
				err = p.SetRate(r)
			}
		})
		if err != nil {
			return err
		}
		return d.front.SetRate(0) // wakes a consumer waiting for the old pace
	}
	if err := d.front.SetRate(r); err != nil {
		return err
	}
	d.setMode(r)
	return nil
}

// Stats returns the queue's counters (zero with PassThrough).
func (d *Device) Stats() aqm.Stats {
	if d.front == nil {
		return aqm.Stats{}
	}
	return d.front.Stats()
}

// Metrics lists the queue's and the front's metrics (see
// [front.Front.Metrics]; none with PassThrough) followed by the wrapper's
// own counters: wgtun_read_packets (packets read from the device),
// wgtun_truncated_reads (reads that lost the rest of a GSO burst),
// wgtun_unparsed_packets (packets that are not IP or are cut short; queued
// as Not-ECT), wgtun_dropped_short_buffer_packets (packets dropped because
// Read's buffer was too small), wgtun_direct_reads (reads of the device by
// Read itself, unshaped, on an empty queue) and wgtun_copied_packets
// (packets Read copied from the wrapper's buffers into the caller's: all of
// them when shaped; on the direct path those the queue reordered or held
// back, or all when the caller's buffers cannot take the device's reads).
// It makes a *Device an [aqm.MetricSource].
func (d *Device) Metrics() iter.Seq[aqm.Metric] {
	var fm iter.Seq[aqm.Metric]
	if d.front != nil {
		fm = d.front.Metrics()
	}
	own := [...]aqm.Metric{
		{Name: "wgtun_read_packets", Kind: aqm.Counter, Value: float64(d.readPackets.Load())},
		{Name: "wgtun_truncated_reads", Kind: aqm.Counter, Value: float64(d.tooManySegments.Load())},
		{Name: "wgtun_unparsed_packets", Kind: aqm.Counter, Value: float64(d.unparsed.Load())},
		{Name: "wgtun_dropped_short_buffer_packets", Kind: aqm.Counter, Value: float64(d.shortBuffer.Load())},
		{Name: "wgtun_direct_reads", Kind: aqm.Counter, Value: float64(d.directReads.Load())},
		{Name: "wgtun_copied_packets", Kind: aqm.Counter, Value: float64(d.copied.Load())},
	}
	return func(yield func(aqm.Metric) bool) {
		if fm != nil {
			for m := range fm {
				if !yield(m) {
					return
				}
			}
		}
		for _, m := range own {
			if !yield(m) {
				return
			}
		}
	}
}

// chanMutex is a mutex made of a channel of capacity one, so that a
// goroutine waiting for it is durably blocked in a testing/synctest bubble.
type chanMutex chan struct{}

func (m chanMutex) Lock()   { m <- struct{}{} }
func (m chanMutex) Unlock() { <-m }

// pool is the free list of packet slots.
type pool struct {
	mu     sync.Mutex
	cond   sync.Cond
	free   []uint32
	closed bool
}

func (p *pool) init(n int) {
	p.cond.L = &p.mu
	p.free = make([]uint32, n)
	for i := range p.free {
		p.free[i] = uint32(n - 1 - i)
	}
}

// get fills dst with free slots, waiting for them if need be (the sizing in
// New makes that never happen); it returns false if the pool is closed.
func (p *pool) get(dst []uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) < len(dst) && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		return false
	}
	n := len(p.free) - len(dst)
	copy(dst, p.free[n:])
	p.free = p.free[:n]
	return true
}

func (p *pool) put(s uint32) {
	p.mu.Lock()
	p.free = append(p.free, s)
	p.mu.Unlock()
	p.cond.Signal()
}

func (p *pool) putSlots(ss []uint32) {
	if len(ss) == 0 {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, ss...)
	p.mu.Unlock()
	p.cond.Signal()
}

func (p *pool) putPackets(ps []aqm.Packet[uint32]) {
	p.mu.Lock()
	for _, q := range ps {
		p.free = append(p.free, q.Payload)
	}
	p.mu.Unlock()
	p.cond.Signal()
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
}
