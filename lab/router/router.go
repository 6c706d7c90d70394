package router

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// Device is a packet device the router reads from and writes back to: a TUN
// queue (*tun.Device) or, in tests, an in-memory pipe.
type Device interface {
	// ReadBatch blocks until at least one packet is ready, reads up to
	// len(bufs) packets into bufs[i] with their lengths in sizes[i], and
	// returns how many. One goroutine calls it at a time.
	ReadBatch(bufs [][]byte, sizes []int) (int, error)
	// WriteBatch writes pkts in order and returns how many it wrote; when
	// fewer than len(pkts), err says why pkts[n] was not written. It may be
	// called from several goroutines.
	WriteBatch(pkts [][]byte) (int, error)
	// SetReadDeadline makes blocked and later reads fail once t has passed;
	// the router sets a past deadline to stop its readers.
	SetReadDeadline(t time.Time) error
}

// Defaults of Config's zero fields.
const (
	DefaultAQM        = "fq-codel"
	DefaultMaxQueues  = 64
	DefaultPrefix4    = 24
	DefaultPrefix6    = 64
	DefaultDelayLimit = 4096
	DefaultBuffers    = 32768
	DefaultBufferSize = 2048
	DefaultReadBatch  = 32
	DefaultDrain      = time.Second
	DefaultBurst      = 5 * time.Millisecond
	MaxBurst          = time.Second
	// DefaultVnetBufferSize is BufferSize's default with VnetHdr: a
	// virtio-net header and a 64 KiB super-packet.
	DefaultVnetBufferSize = iphdr.VnetHdrLen + 65535
	// SegmentBufferSize is the size of the buffers that hold the segments
	// of a split super-packet: a virtio-net header and 2048 bytes.
	SegmentBufferSize = iphdr.VnetHdrLen + 2048
	// MaxSplitSegments is the most segments the router cuts a
	// super-packet into; one standing for more is queued whole.
	MaxSplitSegments = 128
)

// Config configures a Router. The zero Config forwards unshaped through an
// FQ-CoDel per destination /24 or /64, with no delay.
type Config struct {
	// AQM names the queue of each direction: any name of package queues
	// (fifo, codel, fq-codel, cake, ...). Empty means DefaultAQM.
	AQM string
	// LimitPackets overrides the packet limit of each direction's queue;
	// zero keeps the preset for Rate (four 100 ms round trips).
	LimitPackets int
	// Params sets fields of the queue's own configuration after its
	// preset, as comma-separated name=value pairs with the names of the
	// algorithm's Config ("target=5ms,disable-flood-guard=true"); see
	// queues.SetParams. Empty keeps the preset.
	Params string
	// Rate is each direction's rate, in bits per second of IP packet
	// bytes; zero forwards unshaped. The queue's limits are its
	// algorithm's preset for the rate. A queue that shapes by itself
	// (CAKE) is given the rate, and its front a bucket at the same rate
	// that only bounds its bursts (Burst).
	Rate aqm.Rate
	// Burst is how much sending each direction's token bucket may save up,
	// as time at Rate: after a wake-up that came late, the front sends up
	// to this much at once, so that the late time is made up and the long-run
	// rate kept. A blocking consumer sleeps its wake slack (1 ms) past each
	// departure and Go's runtime on Linux rounds sleeps to whole
	// milliseconds, so a 2 ms bucket would be filled by an on-time
	// wake-up; the 5 ms default (the library front's default too)
	// leaves 3 ms for a busy machine. Zero
	// means DefaultBurst; at most MaxBurst. It has no effect unshaped. A
	// queue that shapes itself (CAKE) keeps its own lag, but the front's
	// bucket behind it bounds what it catches up at once to Burst as well.
	Burst time.Duration
	// Delay holds every packet this long after it leaves its queue,
	// before it is written back: a fixed propagation delay per direction.
	// Zero writes packets as they leave.
	Delay time.Duration
	// DelayLimit is the most packets each direction's delay line holds;
	// a packet leaving the queue when it is full is dropped (delay_full).
	// Zero means DefaultDelayLimit. Size it above Rate × Delay in packets.
	DelayLimit int
	// MaxQueues bounds the number of directions (destination prefixes);
	// packets to further prefixes are dropped (no_queue). Zero means
	// DefaultMaxQueues.
	MaxQueues int
	// Prefix4 and Prefix6 are the prefix lengths that group destinations
	// into directions. Zero means DefaultPrefix4 (/24) and DefaultPrefix6
	// (/64).
	Prefix4, Prefix6 int
	// Buffers bounds the packet buffers in use at once (queued, delayed or
	// being read); a packet read when all are in use is dropped
	// (no_buffer). Buffers are made on demand and reused. Zero means
	// DefaultBuffers. With VnetHdr it bounds the read buffers and, apart,
	// the segment buffers (SegmentBufferSize) that small packets and split
	// segments are queued in.
	Buffers int
	// BufferSize is each buffer's size in bytes; it must hold the device's
	// MTU, as longer packets arrive cut and are dropped (truncated). Zero
	// means DefaultBufferSize.
	BufferSize int
	// ReadBatch is the most packets one device read returns. Zero means
	// DefaultReadBatch.
	ReadBatch int
	// Drain is how long Run, once its context ends, keeps sending what is
	// queued and delayed before it drops the rest (flushed). Zero means
	// DefaultDrain; a negative Drain drops at once.
	Drain time.Duration
	// VnetHdr says every packet the devices deliver and take starts with a
	// virtio-net header (iphdr.VnetHdr): a TUN opened with offloads
	// (tun.Config.Offload), whose reads may be GSO super-packets of up to
	// 64 KiB. Queues then see the IP packet behind the header, and the
	// counters and the rate count IP bytes: for a super-packet kept whole,
	// the bytes its segments put on the wire, each segment with its own IP
	// and transport headers (iphdr.GSOWireSize). Read buffers are
	// DefaultVnetBufferSize; a packet that fits SegmentBufferSize is copied
	// into a buffer of that size before it is queued, so that only kept
	// super-packets hold big buffers in a queue.
	VnetHdr bool
	// GSO says what happens to a super-packet with VnetHdr: split into its
	// segments (each queued, marked and written as its own packet, with a
	// GSONone header and complete checksums) or kept whole (queued as one
	// packet whose aqm.Meta.Segments counts its segments, a mark or drop
	// applying to all of them, written back with its header for the
	// kernel to segment). The zero value, front.GSOAuto, decides per
	// super-packet: kept when the direction is unshaped or its wire bytes
	// take at most 2 ms at the direction's rate (front.GSOAuto),
	// split otherwise, and kept whatever its size while the router is
	// saturated (LoadConfig). A super-packet whose segments do not fit SegmentBufferSize, or that
	// stands for more than MaxSplitSegments, is kept whole.
	GSO front.GSOPolicy
	// DisableCoalesce, with VnetHdr, writes every packet with its own
	// system call. By default consecutive TCP segments of one flow that
	// leave a direction together (same addresses, ports, ECN field and
	// options, contiguous data) are joined into one super-packet and
	// written once, for the kernel to cut back into the same segments.
	DisableCoalesce bool
	// Load says how the router watches its own load: whether it is the
	// bottleneck, what it sustains, and whether it caps its rate.
	Load LoadConfig
	// Clock is the router's time source; nil means clock.Mono.
	Clock clock.Clock
	// Tap, if set, sees every packet read and written (tap.go).
	Tap Tap
	// OnQueue, if set, is called once for each direction when it is
	// created, on the reading goroutine: to publish its metrics, say.
	OnQueue func(*Queue)
	// Logf, if set, receives rare events: the first drop for a full table,
	// the first write error of each direction.
	Logf func(format string, args ...any)
}

func (c Config) withDefaults() Config {
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.AQM == "" {
		c.AQM = DefaultAQM
	}
	set(&c.DelayLimit, DefaultDelayLimit)
	set(&c.MaxQueues, DefaultMaxQueues)
	set(&c.Prefix4, DefaultPrefix4)
	set(&c.Prefix6, DefaultPrefix6)
	set(&c.Buffers, DefaultBuffers)
	if c.VnetHdr {
		set(&c.BufferSize, DefaultVnetBufferSize)
	}
	set(&c.BufferSize, DefaultBufferSize)
	set(&c.ReadBatch, DefaultReadBatch)
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Clock == nil {
		c.Clock = clock.NewMono()
	}
	return c
}

// Validate reports every bad field as an *aqm.ConfigError, joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "router", Field: field, Value: v, Rule: rule})
	}
	if c.Delay < 0 {
		bad("Delay", c.Delay, "must not be negative")
	}
	if c.Burst < 0 || c.Burst > MaxBurst {
		bad("Burst", c.Burst, "must be in [0, "+MaxBurst.String()+"]")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"LimitPackets", c.LimitPackets}, {"DelayLimit", c.DelayLimit}, {"MaxQueues", c.MaxQueues}, {"Buffers", c.Buffers}, {"BufferSize", c.BufferSize}, {"ReadBatch", c.ReadBatch}} {
		if f.v < 0 {
			bad(f.name, f.v, "must not be negative")
		}
	}
	if c.Prefix4 < 0 || c.Prefix4 > 32 {
		bad("Prefix4", c.Prefix4, "must be in [0, 32]")
	}
	if c.Prefix6 < 0 || c.Prefix6 > 128 {
		bad("Prefix6", c.Prefix6, "must be in [0, 128]")
	}
	if c.BufferSize > 0 && c.BufferSize < 64 {
		bad("BufferSize", c.BufferSize, "must be at least 64 bytes")
	}
	if c.GSO > front.GSOKeep {
		bad("GSO", c.GSO, "must be auto, split or keep")
	}
	c.Load.validate(c.Rate, bad)
	if c.ReadBatch > 1024 {
		bad("ReadBatch", c.ReadBatch, "must be at most 1024")
	}
	if len(errs) == 0 {
		cfg := c.withDefaults()
		if _, err := newQueue(cfg.AQM, cfg.Rate, cfg.LimitPackets, cfg.Params, nil); err != nil {
			bad("AQM", cfg.AQM, err.Error())
		}
	}
	return errors.Join(errs...)
}

// Router forwards packets read from its devices back into them, through one
// queue per destination prefix, each at the configured rate and followed by
// the configured delay.
type Router struct {
	cfg Config
	// rate is cfg.Rate for the goroutines that read it while a
	// reconfiguration may change it (the load monitor).
	rate  atomic.Uint64
	devs  []Device
	clk   clock.Clock
	pool  *pool
	seg   *pool // segment buffers, with VnetHdr
	off   int   // bytes before the IP packet: the virtio-net header, or 0
	table *table[Queue]
	load  *loadMonitor

	// unclassified counts the packets dropped before they had a queue.
	unclassified counters
	// acct makes Stats a consistent cut (account.go); ctl serialises
	// Reconfigure (control.go).
	acct accountant
	ctl  sync.Mutex

	// consumers and lines run until the drain at shutdown ends.
	flowCtx    context.Context
	stopFlow   context.CancelFunc
	consumers  sync.WaitGroup
	lines      sync.WaitGroup
	started    atomic.Bool
	loggedFull atomic.Bool
}

// New returns a router over devs (one reader each; directions write to
// devs[i mod len(devs)]) with cfg's defaults filled in.
func New(cfg Config, devs ...Device) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, errors.New("router: no device")
	}
	cfg = cfg.withDefaults()
	r := &Router{cfg: cfg, devs: devs, clk: cfg.Clock, pool: newPool(cfg.BufferSize, cfg.Buffers)}
	r.rate.Store(uint64(cfg.Rate))
	if cfg.VnetHdr {
		r.off = iphdr.VnetHdrLen
		r.seg = newPool(SegmentBufferSize, cfg.Buffers)
	}
	r.flowCtx, r.stopFlow = context.WithCancel(context.Background())
	r.table = newTable(cfg.MaxQueues, r.newQueue)
	r.load = newLoadMonitor(r, cfg.Load, len(devs))
	return r, nil
}

// Config returns the configuration in effect, defaults filled in.
func (r *Router) Config() Config {
	r.acct.mu.Lock()
	defer r.acct.mu.Unlock()
	return r.cfg
}

// Queue is one direction: the packets to one destination prefix, their queue
// and front, and the delay line after it.
type Queue struct {
	r      *Router
	prefix netip.Prefix
	front  *front.Front[[]byte]
	cls    classifier
	line   *delayLine[[]byte]
	dev    Device
	c      counters
	// inflight counts packets taken from the front or the line and not yet
	// pushed, written or dropped.
	inflight atomic.Int64
	// held counts packets the front accepted and emit has not started on
	// (account.go).
	held       atomic.Int64
	loggedErr  atomic.Bool
	loggedJoin atomic.Bool
	// inline: unshaped, so the reader that offers packets also takes them
	// out (forward) and no consumer goroutine runs.
	inline bool
	// split: super-packets may be cut into their segments (Config.GSO;
	// splits decides per super-packet).
	split bool
	// rate is the direction's rate in bit/s, for the GSO rule.
	rate atomic.Uint64
}

func (r *Router) newQueue(pfx netip.Prefix, index int) (*Queue, error) {
	d := &Queue{r: r, prefix: pfx, dev: r.devs[index%len(r.devs)]}
	q, err := newQueue(r.cfg.AQM, r.cfg.Rate, r.cfg.LimitPackets, r.cfg.Params, d.dropQueued)
	if err != nil {
		return nil, err
	}
	q, d.cls = forIP(q, r.off)
	d.split = r.cfg.VnetHdr && r.cfg.GSO != front.GSOKeep
	d.rate.Store(uint64(r.cfg.Rate))
	fc := frontConfig(r.cfg.Rate, r.cfg.Burst)
	rate := fc.Rate
	d.front, err = front.New[[]byte](newSwapQueue(q), clock.NewCoarse(r.clk), fc)
	if err != nil {
		return nil, err
	}
	if r.cfg.Delay > 0 {
		d.line = newDelayLine[[]byte](r.cfg.DelayLimit)
		r.lines.Add(1)
		go func() {
			defer r.lines.Done()
			d.line.run(r.flowCtx, r.clk, front.RunBatch, d.sendDelayed)
		}()
	}
	if d.inline = rate == 0 && r.cfg.Rate == 0; !d.inline {
		r.consumers.Add(1)
		go func() {
			defer r.consumers.Done()
			d.consume(r.flowCtx)
		}()
	}
	if r.cfg.OnQueue != nil {
		r.cfg.OnQueue(d)
	}
	return d, nil
}

// frontConfig is a direction's front: the rate with a bucket of burst at
// it (at least the front's smallest default burst), or unshaped when the
// rate is zero. A queue that paces itself (CAKE) gets the same bucket
// behind its own shaper, which then decides every departure but cannot
// catch up more than the burst after a late wake-up.
func frontConfig(rate aqm.Rate, burst time.Duration) front.Config {
	if rate == 0 {
		return front.Config{}
	}
	b := uint64(rate) / 8 * uint64(burst) / uint64(time.Second)
	if uint64(rate)/8 > uint64(front.MaxBurstBytes) { // keep the product in range
		b = uint64(rate) / 8 / uint64(time.Second) * uint64(burst)
	}
	return front.Config{Rate: rate, BurstBytes: int(min(max(b, front.DefaultMinBurstBytes), front.MaxBurstBytes))}
}

// Prefix returns the destination prefix the queue serves.
func (d *Queue) Prefix() netip.Prefix { return d.prefix }

// dropQueued is the queue's DropFunc: a queued packet it dropped.
func (d *Queue) dropQueued(p aqm.Packet[[]byte], why aqm.Verdict) {
	d.r.acct.enterNow()
	d.held.Add(-1)
	d.c.drop(reasonOf(why))
	d.r.acct.leave()
	d.r.put(p.Payload)
}

func (d *Queue) dropFlushed(p aqm.Packet[[]byte], _ aqm.Verdict) {
	d.r.acct.enterNow()
	d.held.Add(-1)
	d.c.drop(dropFlushed)
	d.r.acct.leave()
	d.r.put(p.Payload)
}

// consume takes packets from the front as the rate lets them leave and
// sends them on (emit), until the front is closed and empty or ctx ends.
func (d *Queue) consume(ctx context.Context) {
	buf := make([]aqm.Packet[[]byte], front.RunBatch)
	out := make([][]byte, 0, front.RunBatch)
	for {
		n, err := d.front.DequeueBatch(ctx, buf)
		if err != nil {
			return
		}
		d.r.acct.enter()
		d.emit(buf[:n], out)
		d.r.acct.leave()
	}
}

// forward is the unshaped direction's consumer, run by the reader that just
// offered packets: it takes what the front holds, in batches of len(buf),
// and sends it on (emit). Unshaped, the queue would release every packet the
// moment a consumer looked, so a consumer goroutine would only add a wake-up
// per packet; the queue still sees (and may drop or mark) every packet.
func (d *Queue) forward(buf []aqm.Packet[[]byte], out [][]byte) {
	for {
		n, _ := d.front.TryDequeueBatch(buf)
		if n == 0 {
			return
		}
		d.emit(buf[:n], out)
	}
}

// emit writes CE into the marked packets of ps, which just left the front,
// and writes them to the device or hands them to the delay line with a
// deadline of now plus the delay. It clears ps; out is scratch space.
func (d *Queue) emit(ps []aqm.Packet[[]byte], out [][]byte) {
	n := len(ps)
	d.inflight.Add(int64(n))
	d.held.Add(-int64(n))
	var due aqm.Time
	if d.line != nil {
		due = d.r.clk.Now().Add(d.r.cfg.Delay)
	}
	out = out[:0]
	for i := range ps {
		p := ps[i].Payload
		if ps[i].ECN == aqm.CE && markCE(p[d.r.off:]) {
			d.c.ceWritten.Add(1)
			d.c.ceSegments.Add(uint64(d.r.segments(p)))
		}
		ps[i] = aqm.Packet[[]byte]{}
		if d.line == nil {
			out = append(out, p)
		} else if !d.line.push(p, due) {
			d.c.drop(dropDelayFull)
			d.r.put(p)
		}
	}
	if len(out) > 0 {
		d.write(out)
		clear(out)
	}
	d.inflight.Add(-int64(n))
}

// sendDelayed writes the packets the delay line releases.
func (d *Queue) sendDelayed(ps [][]byte) {
	d.r.acct.enter()
	d.inflight.Add(int64(len(ps)))
	d.line.done(len(ps))
	d.write(ps)
	d.inflight.Add(-int64(len(ps)))
	d.r.acct.leave()
}

// write writes ps to the device, counting each packet as written or as a
// write error, and returns every buffer to the pool.
func (d *Queue) write(ps [][]byte) {
	d.tapWritten(ps)
	if len(ps) > 1 && d.r.coalesces() {
		d.writeCoalesced(ps)
		return
	}
	for len(ps) > 0 {
		n, err := d.dev.WriteBatch(ps)
		for _, p := range ps[:n] {
			d.c.writtenPackets.Add(1)
			d.c.writtenBytes.Add(uint64(d.r.wireBytes(p)))
			d.r.put(p)
		}
		if n >= len(ps) {
			return
		}
		d.c.drop(dropWriteError)
		d.r.put(ps[n])
		if d.r.cfg.Logf != nil && !d.loggedErr.Swap(true) {
			d.r.cfg.Logf("router: %v: write: %v (further write errors are counted, not logged)", d.prefix, err)
		}
		ps = ps[n+1:]
	}
}

// Run reads and forwards packets until ctx ends or a device read fails, then
// shuts down: it stops reading, lets the queues and delay lines send what
// they hold for at most Config.Drain, drops the rest, and returns. The
// error is the first device error, nil after a plain cancellation. Stats
// are exact once Run has returned. Run may be called once.
func (r *Router) Run(ctx context.Context) error {
	if r.started.Swap(true) {
		return errors.New("router: Run called twice")
	}
	errs := make(chan error, len(r.devs))
	var stopping atomic.Bool
	var readers sync.WaitGroup
	defer r.load.start()()
	for i, dev := range r.devs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			err := r.read(i, dev)
			if stopping.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
				err = nil
			}
			errs <- err
		}()
	}
	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
		if first == nil {
			first = errors.New("router: a reader stopped")
		}
	}
	stopping.Store(true)
	for _, dev := range r.devs {
		dev.SetReadDeadline(time.Unix(1, 0))
	}
	readers.Wait()
	close(errs)
	for err := range errs {
		if first == nil && err != nil {
			first = err
		}
	}
	r.shutdown()
	return first
}

// shutdown closes every front, lets the queues drain and the delay lines
// empty for at most the drain time, and drops whatever is left.
func (r *Router) shutdown() {
	qs := r.table.all()
	for _, d := range qs {
		d.front.Close()
	}
	if r.cfg.Drain < 0 {
		r.stopFlow()
	} else {
		t := time.AfterFunc(r.cfg.Drain, r.stopFlow)
		defer t.Stop()
	}
	r.consumers.Wait()
	for _, d := range qs {
		d.front.Flush(d.dropFlushed)
		if d.line != nil {
			d.line.close()
		}
	}
	r.lines.Wait()
	for _, d := range qs {
		if d.line != nil {
			d.line.flush(func(p []byte) {
				r.acct.enterNow()
				d.c.drop(dropFlushed)
				r.acct.leave()
				r.put(p)
			})
		}
	}
	r.stopFlow()
}

// read is one device's reader, number reader: it reads batches of packets into
// pool buffers and offers each to its direction's front, until a read fails.
func (r *Router) read(reader int, dev Device) error {
	bufs := make([][]byte, r.cfg.ReadBatch)
	sizes := make([]int, len(bufs))
	scratch := make([]byte, r.cfg.BufferSize)
	// For unshaped directions, which this reader forwards itself.
	pk := make([]aqm.Packet[[]byte], front.RunBatch)
	out := make([][]byte, 0, front.RunBatch)
	touched := make([]*Queue, 0, 8)
	var sp *splitter
	if r.cfg.VnetHdr {
		sp = new(splitter)
	}
	defer func() {
		for _, b := range bufs {
			if b != nil {
				r.pool.put(b)
			}
		}
	}()
	for {
		k := 0
		for ; k < len(bufs); k++ {
			if bufs[k] == nil {
				b, ok := r.pool.get()
				if !ok {
					break
				}
				bufs[k] = b
			}
		}
		noBuffer := k == 0
		if noBuffer { // read anyway, to count the packet and keep the device drained
			bufs[0], k = scratch, 1
		}
		t0 := r.load.readStart(reader)
		n, err := dev.ReadBatch(bufs[:k], sizes[:k])
		r.load.readEnd(reader, t0, n, k)
		r.acct.enter()
		for i := range n {
			if d := r.offer(bufs, i, sizes[i], noBuffer, sp); d != nil && d.inline && !slices.Contains(touched, d) {
				touched = append(touched, d)
			}
		}
		for _, d := range touched {
			d.forward(pk, out)
		}
		r.acct.leave()
		clear(touched)
		touched = touched[:0]
		if noBuffer {
			bufs[0] = nil
		}
		if err != nil {
			return err
		}
	}
}

// offer hands the packet read into bufs[i] to its direction, which it
// returns (nil if the packet had none); if the front takes it, bufs[i] is
// set to nil (the buffer now belongs to the queue). With VnetHdr, a
// super-packet the direction splits is cut into segment buffers (sp's
// scratch) and bufs[i] stays with the reader.
func (r *Router) offer(bufs [][]byte, i, size int, noBuffer bool, sp *splitter) *Queue {
	p := bufs[i][:min(size, len(bufs[i]))]
	if size > len(bufs[i]) {
		r.unclassified.read(max(size-r.off, 0))
		r.unclassified.drop(dropTruncated)
		return nil
	}
	if noBuffer {
		r.unclassified.read(max(size-r.off, 0))
		r.unclassified.drop(dropNoBuffer)
		return nil
	}
	var vh iphdr.VnetHdr
	ip := p
	if r.off > 0 {
		h, err := iphdr.ParseVnetHdr(p)
		if err != nil {
			why := dropNotIP
			if err == iphdr.ErrTruncated {
				why = dropTruncated
			}
			r.unclassified.read(max(size-r.off, 0))
			r.unclassified.drop(why)
			return nil
		}
		vh, ip = h, p[r.off:]
	}
	if why, ok := validate(ip); !ok {
		r.unclassified.read(len(ip))
		r.unclassified.drop(why)
		return nil
	}
	pfx, _ := prefixOf(ip, r.cfg.Prefix4, r.cfg.Prefix6)
	d, err := r.table.lookup(pfx)
	if err != nil {
		r.unclassified.read(len(ip))
		r.unclassified.drop(dropNoQueue)
		if r.cfg.Logf != nil && !r.loggedFull.Swap(true) {
			r.cfg.Logf("router: no queue for %v: %v (MaxQueues %d; further drops are counted, not logged)", pfx, err, r.cfg.MaxQueues)
		}
		return nil
	}
	r.tapRead(d, ip)
	segs, wire := 1, len(ip)
	if vh.IsGSO() {
		if n, err := iphdr.GSOSegments(ip, vh); err == nil {
			segs = n
			if w, err := iphdr.GSOWireSize(ip, vh); err == nil {
				wire = w
			}
			if n > 1 && n <= MaxSplitSegments && d.splits(wire) && d.offerSplit(ip, vh, n, wire, sp) {
				d.c.split.Add(1)
				return d
			}
		}
	}
	// A packet that fits a segment buffer is queued in one, so that a
	// queue of small packets does not hold 64 KiB read buffers.
	payload, copied := p, false
	if r.off > 0 && len(p) <= SegmentBufferSize {
		if b, ok := r.seg.get(); ok {
			payload, copied = b[:copy(b, p)], true
		}
	}
	d.c.read(wire)
	m := d.cls.classify(ip)
	m.Size = uint32(wire) // a kept super-packet is charged what its segments put on the wire
	m.Segments = uint16(min(segs, 0xffff))
	switch {
	case d.enqueue(payload, m):
		if !copied {
			bufs[i] = nil
		}
	case copied:
		r.seg.put(payload)
	}
	return d
}

// segments returns how many wire packets the buffer p stands for: with
// VnetHdr, its super-packet's segments (read from the bytes, since a queue
// need not keep aqm.Meta.Segments), and 1 otherwise.
func (r *Router) segments(p []byte) int {
	if r.off == 0 {
		return 1
	}
	h, err := iphdr.ParseVnetHdr(p)
	if err != nil || !h.IsGSO() {
		return 1
	}
	n, _ := iphdr.GSOSegments(p[r.off:], h)
	return n
}

// wireBytes returns the IP bytes the buffer p puts on the wire: without
// VnetHdr its length, and with it the IP packet's length or, for a GSO
// super-packet, the bytes of its segments, headers included
// (iphdr.GSOWireSize).
func (r *Router) wireBytes(p []byte) int {
	if r.off == 0 {
		return len(p)
	}
	ip := p[min(r.off, len(p)):]
	h, err := iphdr.ParseVnetHdr(p)
	if err != nil {
		return len(ip)
	}
	w, _ := iphdr.GSOWireSize(ip, h)
	return w
}

// enqueue offers p (with its Meta m) to the front and counts a refusal; it
// reports whether the front took the buffer.
func (d *Queue) enqueue(p []byte, m aqm.Meta) bool {
	v, err := d.front.Enqueue(aqm.Packet[[]byte]{Payload: p, Meta: m})
	switch {
	case err != nil:
		d.c.drop(dropClosed)
	case !v.Accepted():
		d.c.drop(reasonOf(v))
	default:
		d.held.Add(1)
		return true
	}
	return false
}

// splitter is a reader's scratch space for cutting super-packets.
type splitter struct {
	bufs  [MaxSplitSegments][]byte
	views [MaxSplitSegments][]byte
	sizes [MaxSplitSegments]int
}

// offerSplit cuts the super-packet ip (header h, n segments, wire bytes
// on the wire) into segment buffers and offers each to the front as its
// own packet, behind a GSONone header. It reports false, having queued
// nothing and holding no buffer, if the segments do not fit a segment
// buffer; when too few buffers are free, the super-packet is dropped
// (no_buffer) and counted as wire bytes read.
func (d *Queue) offerSplit(ip []byte, h iphdr.VnetHdr, n, wire int, sp *splitter) bool {
	r := d.r
	k := 0
	for ; k < n; k++ {
		b, ok := r.seg.get()
		if !ok {
			break
		}
		sp.bufs[k] = b
		sp.views[k] = b[r.off:]
	}
	release := func(from int) {
		for j := from; j < k; j++ {
			r.seg.put(sp.bufs[j])
			sp.bufs[j], sp.views[j] = nil, nil
		}
	}
	if k < n { // too few buffers: drop the super-packet, as the reader drops a packet it has none for
		release(0)
		d.c.read(wire)
		d.c.drop(dropNoBuffer)
		return true
	}
	if _, err := iphdr.SplitGSO(ip, h, sp.views[:n], sp.sizes[:n]); err != nil {
		release(0)
		return false
	}
	for j := range n {
		b := sp.bufs[j][:r.off+sp.sizes[j]]
		clear(b[:r.off]) // GSONone, no flags: the checksums are complete
		seg := b[r.off:]
		d.c.read(len(seg))
		m := d.cls.classify(seg)
		if !d.enqueue(b, m) {
			r.seg.put(b)
		}
		sp.bufs[j], sp.views[j] = nil, nil
	}
	return true
}

// Stats returns a snapshot of the counters, per queue and in total, as of
// one instant: Conserved holds for every snapshot, while the router runs too.
func (r *Router) Stats() Stats {
	var s Stats
	r.acct.sample(func() { s = r.stats() })
	s.BuffersInUse, s.SamplesPaused = r.buffersInUse(), r.acct.paused.Load()
	s.BufferBytes = r.bufferBytes()
	return s
}

func (r *Router) stats() Stats {
	s := Stats{AQM: r.cfg.AQM, Rate: r.cfg.Rate, Delay: r.cfg.Delay.String()}
	for _, d := range r.table.all() {
		q := d.stats()
		s.Read.Packets += q.Read.Packets
		s.Read.Bytes += q.Read.Bytes
		s.Written.Packets += q.Written.Packets
		s.Written.Bytes += q.Written.Bytes
		s.Dropped.add(q.Dropped)
		s.Marked += q.Marked
		s.CEWritten += q.CEWritten
		s.CEWrittenSegments += q.CEWrittenSegments
		s.Split += q.Split
		s.Coalesced += q.Coalesced
		s.Queued += q.Queued
		s.Queues = append(s.Queues, q)
	}
	u := r.unclassified.dropsSnapshot()
	s.Unclassified = Count{Packets: r.unclassified.readPackets.Load(), Bytes: r.unclassified.readBytes.Load()}
	s.Read.Packets += s.Unclassified.Packets
	s.Read.Bytes += s.Unclassified.Bytes
	s.Dropped.add(u)
	s.NotIP = u.NotIP
	s.Load = r.load.snapshot()
	return s
}

// Stats returns a snapshot of the queue's counters as of one instant.
func (d *Queue) Stats() QueueStats {
	var s QueueStats
	d.r.acct.sample(func() { s = d.stats() })
	return s
}

func (d *Queue) stats() QueueStats {
	qs := d.front.Stats()
	s := QueueStats{
		Prefix:            d.prefix.String(),
		Read:              Count{Packets: d.c.readPackets.Load(), Bytes: d.c.readBytes.Load()},
		Written:           Count{Packets: d.c.writtenPackets.Load(), Bytes: d.c.writtenBytes.Load()},
		Dropped:           d.c.dropsSnapshot(),
		Marked:            qs.Marked.Packets,
		CEWritten:         d.c.ceWritten.Load(),
		CEWrittenSegments: d.c.ceSegments.Load(),
		Split:             d.c.split.Load(),
		Coalesced:         d.c.coalesced.Load(),
		Queue:             qs,
	}
	if d.line != nil {
		s.Delayed = d.line.holding()
	}
	s.Queued = int(d.held.Load()) + s.Delayed + int(d.inflight.Load())
	return s
}

// Metrics lists the queue's front metrics (the queue's aqm.Stats and the
// front's Detail) followed by the router's own counters for this prefix:
// read and written packets and bytes, the packets held in the delay line,
// and the router's drops by reason. It is safe to call from any goroutine.
func (d *Queue) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		for m := range d.front.Metrics() {
			if !yield(m) {
				return
			}
		}
		s := d.Stats()
		for _, m := range []aqm.Metric{
			{Name: "read_packets", Kind: aqm.Counter, Value: float64(s.Read.Packets)},
			{Name: "read_bytes", Kind: aqm.Counter, Value: float64(s.Read.Bytes)},
			{Name: "written_packets", Kind: aqm.Counter, Value: float64(s.Written.Packets)},
			{Name: "written_bytes", Kind: aqm.Counter, Value: float64(s.Written.Bytes)},
			{Name: "ce_written_packets", Kind: aqm.Counter, Value: float64(s.CEWritten)},
			{Name: "ce_written_segments", Kind: aqm.Counter, Value: float64(s.CEWrittenSegments)},
			{Name: "split_packets", Kind: aqm.Counter, Value: float64(s.Split)},
			{Name: "coalesced_packets", Kind: aqm.Counter, Value: float64(s.Coalesced)},
			{Name: "delayed_packets", Kind: aqm.Gauge, Value: float64(s.Delayed)},
			{Name: "dropped_closed_packets", Kind: aqm.Counter, Value: float64(s.Dropped.Closed)},
			{Name: "dropped_delay_full_packets", Kind: aqm.Counter, Value: float64(s.Dropped.DelayFull)},
			{Name: "dropped_flushed_packets", Kind: aqm.Counter, Value: float64(s.Dropped.Flushed)},
			{Name: "dropped_write_error_packets", Kind: aqm.Counter, Value: float64(s.Dropped.WriteError)},
		} {
			if !yield(m) {
				return
			}
		}
	}
}

// String describes the router's configuration in one line.
func (r *Router) String() string {
	c := r.Config()
	return fmt.Sprintf("%s at %v, delay %v, per /%d and /%d", c.AQM, c.Rate, c.Delay, c.Prefix4, c.Prefix6)
}
