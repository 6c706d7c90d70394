package wgtun

import (
	"context"
	"errors"
	"iter"
	"os"
	"sync"
	"sync/atomic"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
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

// Device wraps a [tun.Device] and puts an AQM, at a rate, on the packets
// read from it. It is itself a tun.Device.
type Device struct {
	inner    tun.Device
	front    *front.Front[uint32]
	hasher   iphdr.Hasher
	overhead uint32

	// Packet buffers: slot s is slab[s*slot : s*slot+slot], holding a packet
	// of lens[s] bytes at readOffset. A slot belongs to exactly one of the
	// pool, the reader goroutine, the queue, or a Read call.
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

	closing   atomic.Bool
	fatal     atomic.Pointer[error] // the device's read error that ended the reader
	done      chan struct{}         // closed when the reader goroutine ends
	closeOnce sync.Once
	closeErr  error

	readPackets     atomic.Uint64
	tooManySegments atomic.Uint64
	unparsed        atomic.Uint64
	shortBuffer     atomic.Uint64
}

// New wraps dev and starts the goroutine that reads from it; [Device.Close]
// stops it. New returns cfg's validation error if cfg is invalid.
func New(dev tun.Device, cfg Config) (*Device, error) {
	if dev == nil {
		return nil, ErrNilDevice
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = randomSeed()
	}
	k0, k1, qseed := splitmix64(&seed), splitmix64(&seed), splitmix64(&seed)

	d := &Device{
		inner:    dev,
		hasher:   iphdr.NewHasherWithKey(k0, k1),
		overhead: uint32(cfg.OverheadBytes),
		done:     make(chan struct{}),
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
	batch := max(min(dev.BatchSize(), MaxBatch), 1)
	// Every slot is somewhere: at most limit in the queue, batch with the
	// reader, MaxBatch in a Read call; the reader never waits for one.
	limit := cfg.limit()
	slots := limit + batch + MaxBatch
	d.slab = make([]byte, slots*d.slot)
	d.lens = make([]uint32, slots)
	d.pool.init(slots)

	q, err := cfg.newQueue(qseed, d.release)
	if err != nil {
		return nil, err
	}
	d.front, err = front.New(q, cfg.Clock, front.Config{Rate: cfg.Rate})
	if err != nil {
		return nil, err
	}

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

	go d.readLoop()
	return d, nil
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
// until the device fails or the wrapper is closed.
func (d *Device) readLoop() {
	defer close(d.done)
	for {
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
			m, perr := d.hasher.Meta(d.pkt(s))
			if perr != nil {
				d.unparsed.Add(1) // queued all the same, as Not-ECT
			}
			m.Size += d.overhead
			d.rps[k] = aqm.Packet[uint32]{Payload: s, Meta: m}
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
					return
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
				return // closed
			}
		}
		if err != nil {
			if errors.Is(err, tun.ErrTooManySegments) {
				d.tooManySegments.Add(1) // the rest of a GSO burst was lost; read on
				continue
			}
			if !d.closing.Load() {
				// The device failed: let Read drain the queue, then
				// report the error.
				fatal := err // a copy, so that err does not escape on every read
				d.fatal.Store(&fatal)
				d.front.Close()
			}
			return
		}
	}
}

// Read is [tun.Device.Read]: it blocks until the rate lets a packet leave,
// then copies up to min(len(bufs), len(sizes), [MaxBatch]) packets that may
// leave now to bufs[i][offset:], setting CE in the header of each packet the
// AQM marked, and sets sizes[i]. A packet that does not fit in its buffer
// is dropped (counted as dropped_short_buffer_packets). Once the wrapper is
// closed it returns an error matching [os.ErrClosed]; if the device failed,
// it returns the device's error after the queued packets. Concurrent calls
// are serialised (wireguard-go reads from one goroutine).
func (d *Device) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if offset < 0 {
		return 0, errors.New("wgtun: negative offset")
	}
	n := min(len(bufs), len(sizes), MaxBatch)
	if n == 0 {
		return 0, nil
	}
	d.readMu.Lock()
	defer d.readMu.Unlock()
	for {
		k, err := d.front.DequeueBatch(context.Background(), d.cps[:n])
		if err != nil {
			if e := d.fatal.Load(); e != nil && !d.closing.Load() {
				return 0, *e
			}
			return 0, os.ErrClosed
		}
		out := 0
		for _, p := range d.cps[:k] {
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
		d.pool.putPackets(d.cps[:k])
		if out > 0 {
			return out, nil
		}
	}
}

// Write passes the packets through to the device unchanged.
func (d *Device) Write(bufs [][]byte, offset int) (int, error) { return d.inner.Write(bufs, offset) }

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
		d.front.Close()
		d.front.Flush(d.release)
		d.pool.close()
		d.closeErr = d.inner.Close()
		<-d.done
	})
	return d.closeErr
}

// SetRate changes the rate at runtime (zero: unlimited).
func (d *Device) SetRate(r aqm.Rate) { d.front.SetRate(r) }

// Stats returns the queue's counters.
func (d *Device) Stats() aqm.Stats { return d.front.Stats() }

// Metrics lists the queue's and the front's metrics (see
// [front.Front.Metrics]) followed by the wrapper's own counters:
// tun_read_packets (packets read from the device), tun_read_too_many_segments
// (reads that lost the rest of a GSO burst), unparsed_packets (packets
// that are not IP or are cut short; queued as Not-ECT) and
// dropped_short_buffer_packets. It makes a *Device an [aqm.MetricSource].
func (d *Device) Metrics() iter.Seq[aqm.Metric] {
	fm := d.front.Metrics()
	own := [...]aqm.Metric{
		{Name: "tun_read_packets", Kind: aqm.Counter, Value: float64(d.readPackets.Load())},
		{Name: "tun_read_too_many_segments", Kind: aqm.Counter, Value: float64(d.tooManySegments.Load())},
		{Name: "unparsed_packets", Kind: aqm.Counter, Value: float64(d.unparsed.Load())},
		{Name: "dropped_short_buffer_packets", Kind: aqm.Counter, Value: float64(d.shortBuffer.Load())},
	}
	return func(yield func(aqm.Metric) bool) {
		for m := range fm {
			if !yield(m) {
				return
			}
		}
		for _, m := range own {
			if !yield(m) {
				return
			}
		}
	}
}

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
