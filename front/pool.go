package front

import (
	"errors"
	"sync"

	"github.com/aqmkit/aqmkit/aqm"
)

// Buf is one packet buffer of a [Pool], the payload of an [IP] front.
type Buf struct {
	// B is the packet, from its IP header on. [Pool.Get] returns a Buf
	// whose B spans the whole buffer: read the packet into it and cut B to
	// the packet's length (b.B = b.B[:n]); [Pool.Put] restores the full
	// length. B may also be set to a sub-slice that starts later (to leave
	// headroom); a Buf whose B no longer reaches a full buffer's capacity
	// is not kept by Put.
	B []byte
}

// defaultBufferBytes is the default [PoolConfig.BufferBytes]: 2048 bytes,
// a 1500-byte MTU with room to spare.
const defaultBufferBytes = 2048

// maxBufferBytes is the largest [PoolConfig.BufferBytes]: 1 MiB, above
// any IP packet (64 KiB, or a 4 GiB jumbogram nobody sends) and any GSO
// batch a TUN device hands over.
const maxBufferBytes = 1 << 20

// defaultPoolFree is the default [PoolConfig.MaxFree]: 1024 buffers (2
// MiB of the default buffers) kept for reuse.
const defaultPoolFree = 1024

// maxPoolFree is the largest [PoolConfig.MaxFree]: 1<<20 buffers.
const maxPoolFree = 1 << 20

// PoolConfig configures a [Pool].
type PoolConfig struct {
	// BufferBytes is the size of each buffer in bytes, in [0,
	// 1048576]. Zero means 2048.
	BufferBytes int
	// MaxFree is the most free buffers the pool keeps, in [0,
	// 1048576]; a buffer put back beyond it is left to the garbage
	// collector. Zero means 1024. It bounds the memory an
	// idle pool retains; size it to the packets in flight (the queue's
	// limit plus a batch or two) so that the steady state allocates
	// nothing.
	MaxFree int
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join. It does not modify c.
func (c PoolConfig) Validate() error {
	var errs []error
	if c.BufferBytes < 0 || c.BufferBytes > maxBufferBytes {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "BufferBytes", Value: c.BufferBytes, Rule: "must be in [0, 1048576]"})
	}
	if c.MaxFree < 0 || c.MaxFree > maxPoolFree {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "MaxFree", Value: c.MaxFree, Rule: "must be in [0, 1048576]"})
	}
	return errors.Join(errs...)
}

// Pool is a free list of packet buffers ([Buf]) of one size, for an [IP]
// front and the code around it: read a packet into [Pool.Get]'s buffer,
// hand it to the front, and the front gives back to the pool every buffer
// it refuses; pass [Pool.Drop] to the queue as its DropFunc so that the
// queue's drops come back too, and Put what you have sent. In the steady
// state Get and Put allocate nothing: Get allocates only when the free
// list is empty.
//
// Unlike sync.Pool it keeps its buffers across garbage collections and
// never holds more than MaxFree of them, so what it retains is known.
// All methods are safe for concurrent use.
type Pool struct {
	mu        sync.Mutex
	free      []*Buf
	size      int
	allocated uint64
	discarded uint64
	dropped   aqm.Count
}

// PoolStats are a [Pool]'s counters.
type PoolStats struct {
	// BufferBytes is the size of each buffer.
	BufferBytes int `metric:"buffer_bytes,gauge"`
	// Free is the number of buffers on the free list now.
	Free int `metric:"free_buffers,gauge"`
	// Allocated counts the buffers Get had to allocate.
	Allocated uint64 `metric:"allocated_buffers,counter"`
	// Discarded counts the buffers Put left to the garbage collector: the
	// free list was full, or the buffer was smaller than the pool's.
	Discarded uint64 `metric:"discarded_buffers,counter"`
	// Dropped counts the packets [Pool.Drop] took back from a queue.
	Dropped aqm.Count `metric:"dropped,counter"`
}

// NewPool returns an empty pool, or cfg's validation error.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BufferBytes == 0 {
		cfg.BufferBytes = defaultBufferBytes
	}
	if cfg.MaxFree == 0 {
		cfg.MaxFree = defaultPoolFree
	}
	return &Pool{free: make([]*Buf, 0, cfg.MaxFree), size: cfg.BufferBytes}, nil
}

// Get returns a free buffer, with B spanning all of it, allocating one if
// none is free. Its contents are whatever the last packet left.
func (p *Pool) Get() *Buf {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.allocated++
	p.mu.Unlock()
	return &Buf{B: make([]byte, p.size)}
}

// Put gives b back for reuse; nil is ignored. b must not be used after
// Put, nor put twice.
func (p *Pool) Put(b *Buf) {
	if b == nil {
		return
	}
	p.mu.Lock()
	p.putLocked(b)
	p.mu.Unlock()
}

func (p *Pool) putLocked(b *Buf) {
	b.B = b.B[:cap(b.B)]
	if len(b.B) < p.size || len(p.free) == cap(p.free) {
		p.discarded++
		return
	}
	p.free = append(p.free, b)
}

// Drop is an [aqm.DropFunc] that puts the dropped packet's buffer back and
// counts it: give pool.Drop to the queue's constructor (cake.New, fq.NewCoDel
// ...) so that the packets the queue drops after accepting them come back.
func (p *Pool) Drop(pkt aqm.Packet[*Buf], _ aqm.Verdict) {
	p.mu.Lock()
	p.dropped.Add(pkt.Size)
	if pkt.Payload != nil {
		p.putLocked(pkt.Payload)
	}
	p.mu.Unlock()
}

// Stats returns a snapshot of the pool's counters.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{BufferBytes: p.size, Free: len(p.free), Allocated: p.allocated, Discarded: p.discarded, Dropped: p.dropped}
}
