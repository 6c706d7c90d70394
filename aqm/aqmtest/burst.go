package aqmtest

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// maxBurst is the most packets one burst call of the Burst check offers or
// asks for. Longer runs of a trace are cut into bursts of at most this many
// at the same instant.
const maxBurst = 300

// burstStep is one call of the Burst check: a burst of arrivals or a burst
// of departures at one instant.
type burstStep struct {
	deq bool
	now aqm.Time
	ps  []aqm.Packet[Payload] // arrivals
	n   int                   // departures asked for
	// vs is the length of the verdict slice passed with ps: equal to
	// len(ps) usually, sometimes shorter (the packets past it are not
	// offered) or longer (the extra slots must stay untouched).
	vs int
}

// burstSteps groups a trace into bursts: an op that moves no time joins
// the burst of the op before it if it is of the same kind, so runs of
// arrivals or departures at one instant become one call; a packet of an
// arrival op with Count > 1 gets a few flows and sizes around the op's, so
// that a burst is not one flow. Payloads number the packets from 1.
func burstSteps(ops []traceOp, budget int) []burstStep {
	var steps []burstStep
	now := startTime
	var seq Payload
	spent := 0
	for _, o := range ops {
		switch {
		case o.JumpTo != 0:
			now = o.JumpTo
		case o.Dt > 0 && now > aqm.Time(1<<63-1)-aqm.Time(o.Dt)-aqm.Time(24*time.Hour):
		default:
			now = max(now+aqm.Time(o.Dt), startTime)
		}
		n := max(o.Count, 1)
		if budget > 0 {
			n = min(n, budget-spent)
			if n <= 0 {
				break
			}
			spent += n
		}
		moved := o.Dt != 0 || o.JumpTo != 0
		last := len(steps) - 1
		join := last >= 0 && !moved && steps[last].deq == (o.Kind == opDequeue)
		if o.Kind == opDequeue {
			for n > 0 {
				if join && steps[last].n < maxBurst {
					k := min(n, maxBurst-steps[last].n)
					steps[last].n += k
					n -= k
					continue
				}
				k := min(n, maxBurst)
				steps = append(steps, burstStep{deq: true, now: now, n: k})
				last, join, n = len(steps)-1, true, n-k
			}
			continue
		}
		for k := range n {
			if !join || len(steps[last].ps) >= maxBurst {
				steps = append(steps, burstStep{now: now})
				last, join = len(steps)-1, true
			}
			seq++
			p := aqm.Packet[Payload]{Payload: seq, Meta: aqm.Meta{Size: o.Size, Hash: o.Hash, ECN: o.ECN, Segments: o.Segments}, Enqueued: 777}
			if k > 0 {
				p.Hash += uint32(k % 3)
				if p.Size >= 64 && p.Size <= 9000 {
					p.Size -= uint32(k%5) * 16
				}
			}
			steps[last].ps = append(steps[last].ps, p)
		}
	}
	for i := range steps {
		s := &steps[i]
		s.vs = len(s.ps)
		switch {
		case s.deq || len(s.ps) < 4:
		case i%11 == 3:
			s.vs = len(s.ps) - 1 - i%3 // the last packets are not offered
		case i%11 == 7:
			s.vs = len(s.ps) + 2 // spare verdict slots
		}
	}
	return steps
}

// dropRec is one DropFunc call.
type dropRec struct {
	p aqm.Packet[Payload]
	v aqm.Verdict
}

// sidecar is one queue of the Burst check with the DropFunc calls it made.
type sidecar struct {
	q     aqm.Queue[Payload]
	drops []dropRec
}

func newSidecar(f Factory, seed uint64) (*sidecar, error) {
	s := &sidecar{}
	q, err := f.New(seed, func(p aqm.Packet[Payload], v aqm.Verdict) { s.drops = append(s.drops, dropRec{p, v}) })
	if err != nil {
		return nil, fmt.Errorf("Factory.New: %w", err)
	}
	if q == nil {
		return nil, errors.New("Factory.New returned a nil queue and no error")
	}
	s.q = q
	return s, nil
}

// hasBurstPath reports whether the queues f builds implement
// [aqm.BatchQueue]. Queues without it are driven by loops of single calls
// in every burst, and the Burst check passes trivially.
func hasBurstPath(f Factory) bool {
	q, err := f.New(1, nil)
	if err != nil || q == nil {
		return false
	}
	_, ok := q.(aqm.BatchQueue[Payload])
	return ok
}

// runBurst plays the trace on two queues of the same seed, one through
// aqm.EnqueueBatch and aqm.DequeueBatch (the queue's burst path, if it has
// one) and one through aqm.EnqueueLoop and aqm.DequeueLoop, and reports
// every difference: verdicts, accepted counts, dequeued packets, DropFunc
// calls, Len, Backlog, Stats and (if the queue has one) Detail, after every
// burst.
func runBurst(f Factory, seed uint64, steps []burstStep) (err error) {
	if seed == 0 {
		seed = 1 // a zero seed asks aqmkit's queues for a secret random one: the two would differ
	}
	b, err := newSidecar(f, seed)
	if err != nil {
		return err
	}
	l, err := newSidecar(f, seed)
	if err != nil {
		return err
	}
	var errs []error
	cur := -1
	failf := func(format string, args ...any) {
		if len(errs) < maxErrors {
			errs = append(errs, fmt.Errorf("burst %d at t=%d: %s", cur, int64(steps[cur].now), fmt.Sprintf(format, args...)))
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = errors.Join(errors.Join(errs...), fmt.Errorf("burst %d: panic: %v", cur, r))
		}
	}()
	const sentinel = aqm.Verdict(0xee)
	var vsB, vsL [maxBurst + 2]aqm.Verdict
	var bufB, bufL [maxBurst]aqm.Packet[Payload]
	var psB, psL [maxBurst]aqm.Packet[Payload]
	for i := range steps {
		cur = i
		s := &steps[i]
		if s.deq {
			clear(bufB[:s.n])
			clear(bufL[:s.n])
			nb := aqm.DequeueBatch(b.q, bufB[:s.n], s.now)
			nl := aqm.DequeueLoop(l.q, bufL[:s.n], s.now)
			if nb != nl {
				failf("DequeueBatch of %d returned %d packets, the loop %d", s.n, nb, nl)
			}
			for k := range min(nb, nl, s.n) {
				if bufB[k] != bufL[k] {
					failf("DequeueBatch packet %d is %s, the loop's is %s", k, fmtPacket(bufB[k]), fmtPacket(bufL[k]))
					break
				}
			}
		} else {
			// Each queue gets its own copy: a queue may not write into the
			// caller's packets, but if it does, that must not hide it.
			copy(psB[:], s.ps)
			copy(psL[:], s.ps)
			for k := range vsB {
				vsB[k], vsL[k] = sentinel, sentinel
			}
			ab := aqm.EnqueueBatch(b.q, psB[:len(s.ps)], vsB[:s.vs], s.now)
			al := aqm.EnqueueLoop(l.q, psL[:len(s.ps)], vsL[:s.vs], s.now)
			if ab != al {
				failf("EnqueueBatch of %d packets (%d verdict slots) accepted %d, the loop %d", len(s.ps), s.vs, ab, al)
			}
			for k := range s.vs {
				if vsB[k] != vsL[k] {
					what := fmt.Sprintf("verdict %v", vsB[k])
					if vsB[k] == sentinel {
						what = "no verdict (slot not written)"
					}
					failf("EnqueueBatch gave packet %d (#%d of the burst) %s, the loop %v", s.ps[k].Payload, k, what, vsL[k])
					break
				}
			}
		}
		compareSidecars(b, l, failf)
		if len(errs) >= maxErrors {
			break
		}
	}
	return errors.Join(errs...)
}

// compareSidecars reports where the burst-driven queue b and the
// loop-driven queue l differ in their observable state.
func compareSidecars(b, l *sidecar, failf func(string, ...any)) {
	if len(b.drops) != len(l.drops) {
		failf("burst path made %d DropFunc calls so far, the loop %d", len(b.drops), len(l.drops))
	}
	for k := range min(len(b.drops), len(l.drops)) {
		if b.drops[k] != l.drops[k] {
			failf("DropFunc call %d: burst path dropped %s (%v), the loop %s (%v)",
				k, fmtPacket(b.drops[k].p), b.drops[k].v, fmtPacket(l.drops[k].p), l.drops[k].v)
			break
		}
	}
	// Keep the logs short: what matched is not needed again.
	if n := min(len(b.drops), len(l.drops)); n > 0 && len(b.drops) == len(l.drops) {
		b.drops, l.drops = b.drops[:0], l.drops[:0]
	}
	if b.q.Len() != l.q.Len() || b.q.Backlog() != l.q.Backlog() {
		failf("Len/Backlog %d/%d after the burst path, %d/%d after the loop", b.q.Len(), b.q.Backlog(), l.q.Len(), l.q.Backlog())
	}
	if sb, sl := b.q.Stats(), l.q.Stats(); sb != sl {
		failf("Stats after the burst path differ from the loop's:\n\tburst %+v\n\tloop  %+v", sb, sl)
	}
	db, ok := detailOf(b.q)
	if dl, _ := detailOf(l.q); ok && !reflect.DeepEqual(db, dl) {
		failf("Detail after the burst path differs from the loop's:\n\tburst %+v\n\tloop  %+v", db, dl)
	}
}

// detailOf calls q's Detail method, if it has one taking no arguments and
// returning one value.
func detailOf(q aqm.Queue[Payload]) (any, bool) {
	m := reflect.ValueOf(q).MethodByName("Detail")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return nil, false
	}
	return m.Call(nil)[0].Interface(), true
}

func fmtPacket(p aqm.Packet[Payload]) string {
	return fmt.Sprintf("{#%d size=%d segs=%d hash=%#x ecn=%v enq=%d}", p.Payload, p.Size, p.Segments, p.Hash, p.ECN, int64(p.Enqueued))
}

// checkBurst compares the burst path with the loop on random traces cut
// into bursts of 0 to maxBurst packets.
func checkBurst(f Factory) error {
	var errs []error
	for s := range uint64(8) {
		ops := randomOps(200+s, 400)
		if err := runBurst(f, s+1, burstSteps(ops, randomTraceBudget)); err != nil {
			errs = append(errs, fmt.Errorf("trace seed %d: %w", 200+s, err))
		}
	}
	// Bursts that overrun every limit, then empty bursts, then a drain in
	// bursts of every size up to maxBurst.
	tr := trace{}.enq(f.burst(), time.Millisecond, 1500, 1, aqm.ECT0).
		enq(40, 0, 300, 2, aqm.NotECT).deq(0, time.Millisecond).
		enq(maxBurst, time.Millisecond, 1500, 3, aqm.ECT1)
	steps := burstSteps(tr, 0)
	steps = append(steps, burstStep{now: steps[len(steps)-1].now}, burstStep{deq: true, now: steps[len(steps)-1].now})
	now := steps[len(steps)-1].now
	for n := 1; n <= maxBurst; n += 7 {
		now += aqm.Time(time.Millisecond)
		steps = append(steps, burstStep{deq: true, now: now, n: n})
	}
	if err := runBurst(f, 9, steps); err != nil {
		errs = append(errs, fmt.Errorf("fixed trace: %w", err))
	}
	return errors.Join(errs...)
}
