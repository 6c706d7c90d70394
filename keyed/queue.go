package keyed

import (
	"errors"
	"iter"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/bucket"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// errNilKey is returned by [New] for a nil key function.
var errNilKey = errors.New("keyed: the key function is nil")

// errNilQueue is returned by [New] for a nil newQueue.
var errNilQueue = errors.New("keyed: the queue constructor is nil")

// Queue is one queue per key (a VPN's peer, a proxy's destination), built on
// demand, behind one scheduler that serves the keys with packets by deficit
// round robin in bytes, optionally each at its own rate ([Config.KeyRate])
// and all together at a shared one ([Config.Rate]). It starts no
// goroutine and holds no timer: every key is served from the one Dequeue.
//
// A Queue is itself an [aqm.Queue] (and an [aqm.BatchQueue], an [aqm.Paced]
// and an [aqm.MetricSource]): like every queue it takes the time as an
// argument and is not safe for concurrent use. Give it to front.New for
// concurrent producers, a blocking consumer and a clock; with a rate, leave
// the front's own rate at zero, and the front's consumer sleeps until the
// next departure a key's bucket or the shared one allows.
//
// # Keys
//
// The key function maps each packet to its key; [Queue.EnqueueKey] takes a
// key the caller already knows. A packet for a key without a queue gets
// one from newQueue. The number of keys is bounded by
// [Config.MaxKeys]; at the bound the idlest key (queue empty, idle the
// longest) is evicted to make room, and when no key is idle the packet is
// refused and counted. A key whose queue stays empty for
// [Config.IdleTime] is reclaimed: Enqueue and Dequeue reclaim at most
// two expired keys per call, [Queue.Reclaim] all of them. An evicted or
// reclaimed key's counters are folded into the totals, so that [Queue.Stats]
// accounts for every packet ever offered.
//
// # Scheduling
//
// Keys with packets take turns in a ring. A key at the head with a
// positive deficit sends one packet and pays its size; a key with none
// gets [Config.QuantumBytes] more and goes to the back. A key that
// becomes active starts with at most one quantum of deficit and keeps any
// debt it left, so going idle buys no extra share. Over any interval in
// which a set of keys stays backlogged, the bytes each sends differ by at
// most a quantum plus a largest packet. A key held back by its own bucket,
// or by a queue that paces itself, leaves the ring for a heap ordered by
// the instant it may send again and rejoins the back of the ring then.
// Work per Dequeue is amortised O(1 + size/quantum) plus O(log keys) per
// key held back.
//
// # Memory
//
// The key slots, the key index and the heap are sized for MaxKeys when the
// Queue is made; a packet for an existing key allocates nothing. Building
// a key's queue calls newQueue, which allocates what the queue needs.
type Queue[K comparable, T any] struct {
	key      func(aqm.Packet[T]) K
	newQueue func(K) (aqm.Queue[T], error)
	cfg      Config // effective
	quantum  int64

	index  map[K]int32
	slots  []keySlot[K, T]
	free   int32         // head of the free slots, linked by next
	active keyList       // keys with packets, in round-robin order
	idle   keyList       // keys with empty queues, idlest first
	held   []int32       // min-heap of held-back keys, by readyAt
	shared bucket.Bucket // the rate over all keys
	live   int

	len, backlog int
	retired      aqm.Stats // the folded counters of reclaimed keys
	own          aqm.Stats // the packets refused for want of a key

	created, reclaimed, evicted uint64
	refusedLimit, refusedNew    aqm.Count
}

// keySlot is one key's state.
type keySlot[K comparable, T any] struct {
	q       aqm.Queue[T]
	pq      aqm.Paced // q, when it paces itself
	key     K
	b       bucket.Bucket // KeyRate; rate zero when there is none
	deficit int64
	// readyAt is when a held-back key may send again, span how far ahead
	// of the instant it was held that was (the time policy: an instant
	// more than span ahead of now is re-anchored).
	readyAt aqm.Time
	span    time.Duration
	// since is when the queue became empty (for an idle key).
	since      aqm.Time
	next, prev int32
	heap       int32 // position in held, -1 when not held
	state      keyState
}

type keyState uint8

const (
	keyFree keyState = iota
	keyIdle
	keyActive
	keyHeld
)

// none is the nil slot index.
const none = -1

// keyList is a doubly linked list of slots through next and prev.
type keyList struct{ head, tail, n int32 }

// reclaimPerCall bounds how many expired keys one Enqueue or Dequeue
// reclaims: two, so that reclamation keeps up with keys going idle (at most
// one per call) while each call's work stays bounded.
const reclaimPerCall = 2

// New returns a Queue that maps each packet to its key with key
// and builds a key's queue with newQueue when its first packet arrives.
// It returns an error for a nil key or newQueue, and cfg's validation
// error.
func New[K comparable, T any](key func(aqm.Packet[T]) K, newQueue func(K) (aqm.Queue[T], error), cfg Config) (*Queue[K, T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if key == nil {
		return nil, errNilKey
	}
	if newQueue == nil {
		return nil, errNilQueue
	}
	cfg = cfg.withDefaults()
	k := &Queue[K, T]{
		key:      key,
		newQueue: newQueue,
		cfg:      cfg,
		quantum:  int64(cfg.QuantumBytes),
		index:    make(map[K]int32, cfg.MaxKeys),
		slots:    make([]keySlot[K, T], cfg.MaxKeys),
		held:     make([]int32, 0, cfg.MaxKeys),
		active:   keyList{none, none, 0},
		idle:     keyList{none, none, 0},
	}
	for i := range k.slots {
		k.slots[i].next = int32(i + 1)
		k.slots[i].heap = none
	}
	k.slots[len(k.slots)-1].next = none
	k.free = 0
	k.shared.SetRate(0, uint64(cfg.Rate), cfg.BurstBytes)
	k.shared.Fill()
	return k, nil
}

// Config returns the configuration in effect, defaults filled in.
func (k *Queue[K, T]) Config() Config { return k.cfg }

// Enqueue offers p to the queue of its key at now; see [Queue.EnqueueKey].
func (k *Queue[K, T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	return k.EnqueueKey(k.key(p), p, now)
}

// EnqueueKey offers p to the queue of key at now, building that queue if
// the key has none, and returns the queue's verdict. It refuses p with
// [aqm.DroppedOverlimit] when the key has no queue and none can be made:
// every one of MaxKeys keys has packets queued, or newQueue failed; both
// are counted in [Detail] and in Stats' DroppedOverlimit.
func (k *Queue[K, T]) EnqueueKey(key K, p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	k.expire(now, reclaimPerCall)
	i, ok := k.index[key]
	if !ok {
		var full bool
		if i, full = k.create(key, now); i == none {
			tally.NoteSize(&k.own, p.Size)
			tally.Drop(&k.own, aqm.DroppedOverlimit, p.Size, false)
			if full {
				k.refusedLimit.Add(p.Size)
			} else {
				k.refusedNew.Add(p.Size)
			}
			return aqm.DroppedOverlimit
		}
	}
	s := &k.slots[i]
	l0, b0 := s.q.Len(), s.q.Backlog()
	v := s.q.Enqueue(p, now)
	l1, b1 := s.q.Len(), s.q.Backlog()
	k.len += l1 - l0
	k.backlog += b1 - b0
	if s.state == keyIdle && l1 > 0 {
		k.remove(&k.idle, i)
		s.state = keyActive
		s.deficit = min(s.deficit, k.quantum)
		k.pushBack(&k.active, i)
	}
	return v
}

// create gives key a slot and a queue, evicting the idlest key at the
// bound, and returns the slot. It returns none, with full set when every
// key has packets queued at the bound, or when newQueue failed.
func (k *Queue[K, T]) create(key K, now aqm.Time) (slot int32, full bool) {
	if k.free == none && k.idle.head == none {
		return none, true
	}
	q, err := k.newQueue(key)
	if err != nil || unusable(q) {
		return none, false
	}
	if k.free == none {
		k.evicted++
		k.release(k.idle.head)
	}
	i := k.free
	s := &k.slots[i]
	k.free = s.next
	*s = keySlot[K, T]{q: q, key: key, deficit: k.quantum, heap: none, state: keyIdle, since: now}
	s.pq, _ = q.(aqm.Paced)
	s.b.SetRate(0, uint64(k.cfg.KeyRate), k.cfg.KeyBurstBytes)
	s.b.Fill()
	k.pushBack(&k.idle, i)
	k.index[key] = i
	k.live++
	k.created++
	return i, false
}

// expire reclaims up to max keys idle for IdleTime or longer at now.
func (k *Queue[K, T]) expire(now aqm.Time, max int) int {
	n := 0
	for ; n < max; n++ {
		h := k.idle.head
		if h == none || now.Sub(k.slots[h].since) < k.cfg.IdleTime {
			break
		}
		k.reclaimed++
		k.release(h)
	}
	return n
}

// Reclaim reclaims every key idle for IdleTime or longer at now and returns
// how many. Enqueue and Dequeue reclaim a few per call; call Reclaim from a
// ticker to let go of idle keys' queues while no packets flow.
func (k *Queue[K, T]) Reclaim(now aqm.Time) int {
	return k.expire(now, len(k.slots))
}

// release folds idle slot i's counters into the totals and frees it.
func (k *Queue[K, T]) release(i int32) {
	s := &k.slots[i]
	k.remove(&k.idle, i)
	st := s.q.Stats()
	st.Len, st.Backlog = 0, 0
	k.retired = tally.Sum(k.retired, st)
	delete(k.index, s.key)
	*s = keySlot[K, T]{next: k.free, heap: none}
	k.free = i
	k.live--
}

// Dequeue returns the next packet at now: from the key at the head of the
// round robin whose deficit and bucket let it send, when the shared bucket
// lets a packet leave. It returns false when no packet may leave at now;
// [Queue.NextDeparture] then says when one may.
func (k *Queue[K, T]) Dequeue(now aqm.Time) (aqm.Packet[T], bool) {
	var zero aqm.Packet[T]
	k.expire(now, reclaimPerCall)
	k.unhold(now)
	if k.len == 0 {
		return zero, false
	}
	k.shared.Refill(now)
	if !k.shared.Ready() {
		return zero, false
	}
	for k.active.head != none {
		i := k.active.head
		s := &k.slots[i]
		if s.deficit <= 0 {
			s.deficit += k.quantum
			k.remove(&k.active, i)
			k.pushBack(&k.active, i)
			continue
		}
		if s.b.Rate != 0 {
			s.b.Refill(now)
			if !s.b.Ready() {
				k.hold(i, now, s.b.Wait())
				continue
			}
		}
		l0, b0 := s.q.Len(), s.q.Backlog()
		p, ok := s.q.Dequeue(now)
		l1, b1 := s.q.Len(), s.q.Backlog()
		k.len += l1 - l0
		k.backlog += b1 - b0
		if !ok {
			if l1 > 0 {
				k.hold(i, now, k.pacedWait(s, now))
			} else {
				k.goIdle(i, now)
			}
			continue
		}
		s.deficit -= int64(p.Size)
		s.b.Charge(p.Size)
		k.shared.Charge(p.Size)
		if l1 == 0 {
			k.goIdle(i, now)
		}
		return p, true
	}
	return zero, false
}

// pacedWait is how long a key whose queue refused while it holds packets
// waits: until the queue's NextDeparture when it paces itself, at least
// minPacedWait.
func (k *Queue[K, T]) pacedWait(s *keySlot[K, T], now aqm.Time) time.Duration {
	if s.pq != nil {
		if next := s.pq.NextDeparture(now); next.After(now) {
			return max(next.Sub(now), minPacedWait)
		}
	}
	return minPacedWait
}

// goIdle moves active slot i, whose queue is empty, to the idle list. Its
// idle instant is never before the last idle key's, so the list stays in
// the order reclamation reads it even when time goes backwards.
func (k *Queue[K, T]) goIdle(i int32, now aqm.Time) {
	s := &k.slots[i]
	k.remove(&k.active, i)
	if t := k.idle.tail; t != none && k.slots[t].since.After(now) {
		now = k.slots[t].since
	}
	s.since = now
	s.state = keyIdle
	k.pushBack(&k.idle, i)
}

// hold moves active slot i to the heap of held-back keys until now + wait.
func (k *Queue[K, T]) hold(i int32, now aqm.Time, wait time.Duration) {
	s := &k.slots[i]
	k.remove(&k.active, i)
	s.state = keyHeld
	s.readyAt = now.Add(wait)
	s.span = wait
	s.heap = int32(len(k.held))
	k.held = append(k.held, i)
	k.up(int(s.heap))
}

// unhold returns to the ring every held-back key whose instant has come,
// re-anchoring the earliest when it lies further ahead of now than it was
// scheduled (time went backwards).
func (k *Queue[K, T]) unhold(now aqm.Time) {
	for len(k.held) > 0 {
		i := k.held[0]
		s := &k.slots[i]
		if s.readyAt.Sub(now) > s.span {
			s.readyAt = now.Add(s.span)
			k.down(0)
			continue
		}
		if s.readyAt.After(now) {
			return
		}
		k.popHeld()
		if s.q.Len() == 0 {
			s.state = keyActive // goIdle takes it from the ring
			k.pushBack(&k.active, i)
			k.goIdle(i, now)
			continue
		}
		s.state = keyActive
		k.pushBack(&k.active, i)
	}
}

// NextDeparture returns when Dequeue can next return a packet if nothing
// else arrives: now if it can at once, later if every key with packets is
// held back or the shared bucket is in debt, the zero Time if no packets
// are queued.
func (k *Queue[K, T]) NextDeparture(now aqm.Time) aqm.Time {
	if k.len == 0 {
		return 0
	}
	k.unhold(now)
	t := now
	if k.active.head == none && len(k.held) > 0 {
		t = k.slots[k.held[0]].readyAt
	}
	k.shared.Refill(now)
	if w := k.shared.Wait(); w > 0 && now.Add(w).After(t) {
		t = now.Add(w)
	}
	return t
}

// EnqueueBatch is the loop of Enqueue calls at now ([aqm.EnqueueLoop]).
func (k *Queue[K, T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n, acc := min(len(ps), len(vs)), 0
	for i := range n {
		vs[i] = k.Enqueue(ps[i], now)
		if vs[i].Accepted() {
			acc++
		}
	}
	return acc
}

// DequeueBatch is the loop of Dequeue calls at now ([aqm.DequeueLoop]): it
// stops early when no packet may leave at now.
func (k *Queue[K, T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	for n := range buf {
		p, ok := k.Dequeue(now)
		if !ok {
			return n
		}
		buf[n] = p
	}
	return len(buf)
}

// Len returns the number of packets queued over all keys.
func (k *Queue[K, T]) Len() int { return k.len }

// Backlog returns the number of bytes queued over all keys.
func (k *Queue[K, T]) Backlog() int { return k.backlog }

// KeyStats returns the Stats of key's queue, and false if the key has none
// (never seen, or reclaimed: its counters are then in the totals).
func (k *Queue[K, T]) KeyStats(key K) (aqm.Stats, bool) {
	i, ok := k.index[key]
	if !ok {
		return aqm.Stats{}, false
	}
	return k.slots[i].q.Stats(), true
}

// Stats returns the totals over every key that ever had a queue, those
// reclaimed included, and the packets refused for want of a key (in
// DroppedOverlimit). It reads every live key's queue: O(keys).
func (k *Queue[K, T]) Stats() aqm.Stats {
	t := tally.Sum(k.retired, k.own)
	for i := range k.slots {
		if k.slots[i].state != keyFree {
			t = tally.Sum(t, k.slots[i].q.Stats())
		}
	}
	return t
}

// Detail is a snapshot of a [Queue] queue's own state, beside its
// [aqm.Stats].
type Detail struct {
	// Keys is the number of keys that have a queue.
	Keys int `metric:"keys,gauge"`
	// ActiveKeys is how many of them have packets and take turns now;
	// HeldKeys how many have packets and wait for their bucket or their
	// pacing queue.
	ActiveKeys int `metric:"active_keys,gauge"`
	HeldKeys   int `metric:"held_keys,gauge"`
	// CreatedKeys counts the queues built, ReclaimedKeys the keys let go
	// after IdleTime, EvictedKeys those let go earlier to make room for a
	// new key at MaxKeys.
	CreatedKeys   uint64 `metric:"created_keys,counter"`
	ReclaimedKeys uint64 `metric:"reclaimed_keys,counter"`
	EvictedKeys   uint64 `metric:"evicted_keys,counter"`
	// RefusedKeyLimit counts the packets refused because MaxKeys keys all
	// had packets queued; RefusedNewQueue those refused because newQueue
	// failed. Both are in Stats' DroppedOverlimit too.
	RefusedKeyLimit aqm.Count `metric:"refused_key_limit,counter"`
	RefusedNewQueue aqm.Count `metric:"refused_new_queue,counter"`
	// KeyRate and SharedRate are the configured rates; zero means none.
	KeyRate    aqm.Rate `metric:"key_rate_bits_per_second,gauge"`
	SharedRate aqm.Rate `metric:"shared_rate_bits_per_second,gauge"`
	// SharedCreditBytes is the shared bucket's credit at its last refill,
	// in whole bytes; negative while a debt is repaid.
	SharedCreditBytes int64 `metric:"shared_credit_bytes,gauge"`
	// MemoryBytes is what the key slots, index and heap took when the
	// Queue was made (the index estimated), without the keys' queues.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

var detailMetrics = metrics.Declare[Detail]("keyed_")

// Detail returns a snapshot of the queue's own state.
func (k *Queue[K, T]) Detail() Detail {
	var s keySlot[K, T]
	var key K
	slot := int(unsafe.Sizeof(s))
	entry := int(unsafe.Sizeof(key)) + 4 + 1 // key, int32 index, control byte
	return Detail{
		Keys:              k.live,
		ActiveKeys:        int(k.active.n),
		HeldKeys:          len(k.held),
		CreatedKeys:       k.created,
		ReclaimedKeys:     k.reclaimed,
		EvictedKeys:       k.evicted,
		RefusedKeyLimit:   k.refusedLimit,
		RefusedNewQueue:   k.refusedNew,
		KeyRate:           k.cfg.KeyRate,
		SharedRate:        k.cfg.Rate,
		SharedCreditBytes: k.shared.CreditBytes(),
		MemoryBytes:       len(k.slots)*slot + cap(k.held)*4 + len(k.slots)*entry*8/7,
	}
}

// Metrics lists the totals' metrics ([Queue.Stats]), then the Detail's,
// whose names begin "keyed_"; a *Queue is an [aqm.MetricSource].
func (k *Queue[K, T]) Metrics() iter.Seq[aqm.Metric] {
	return detailMetrics.Queue(k.Stats(), k.Detail())
}

// pushBack appends slot i to l.
func (k *Queue[K, T]) pushBack(l *keyList, i int32) {
	s := &k.slots[i]
	s.next, s.prev = none, l.tail
	if l.tail == none {
		l.head = i
	} else {
		k.slots[l.tail].next = i
	}
	l.tail = i
	l.n++
}

// remove takes slot i out of l.
func (k *Queue[K, T]) remove(l *keyList, i int32) {
	s := &k.slots[i]
	if s.prev == none {
		l.head = s.next
	} else {
		k.slots[s.prev].next = s.next
	}
	if s.next == none {
		l.tail = s.prev
	} else {
		k.slots[s.next].prev = s.prev
	}
	s.next, s.prev = none, none
	l.n--
}

// The heap of held-back keys, ordered by readyAt.

func (k *Queue[K, T]) less(a, b int) bool {
	return k.slots[k.held[a]].readyAt.Before(k.slots[k.held[b]].readyAt)
}

func (k *Queue[K, T]) swap(a, b int) {
	k.held[a], k.held[b] = k.held[b], k.held[a]
	k.slots[k.held[a]].heap = int32(a)
	k.slots[k.held[b]].heap = int32(b)
}

func (k *Queue[K, T]) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !k.less(j, p) {
			return
		}
		k.swap(j, p)
		j = p
	}
}

func (k *Queue[K, T]) down(j int) {
	n := len(k.held)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && k.less(r, l) {
			m = r
		}
		if !k.less(m, j) {
			return
		}
		k.swap(j, m)
		j = m
	}
}

// popHeld takes the earliest key off the heap.
func (k *Queue[K, T]) popHeld() {
	last := len(k.held) - 1
	k.swap(0, last)
	k.slots[k.held[last]].heap = none
	k.held = k.held[:last]
	if last > 0 {
		k.down(0)
	}
}

// minPacedWait is the shortest wait for a key whose queue paces itself and
// refused a packet while saying one may leave now (a contradiction a correct
// queue never shows): the key is held that long instead of being polled.
const minPacedWait = 10 * time.Microsecond

// unusable reports whether q is nil or cannot answer Len, as a nil pointer
// in a non-nil interface cannot: the probe finds a typed nil of any queue
// type without reflection, at the cost of one Len call per key's queue.
func unusable[T any](q aqm.Queue[T]) (bad bool) {
	if q == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			bad = true
		}
	}()
	q.Len()
	return false
}
