package router

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// TestDelayLineDeadlines protects the delay line's timing on an explicit
// clock: nothing leaves before its deadline, everything due leaves in FIFO
// order, and an earlier deadline behind a later one is raised to it.
func TestDelayLineDeadlines(t *testing.T) {
	l := newDelayLine[int](10)
	const ms = aqm.Time(time.Millisecond)
	for i, due := range []aqm.Time{10 * ms, 12 * ms, 11 * ms, 20 * ms} { // 11 ms is raised to 12
		if !l.push(i, due) {
			t.Fatalf("push %d refused", i)
		}
	}
	out := make([]int, 8)
	steps := []struct {
		now  aqm.Time
		want []int
		next aqm.Time
	}{
		{9 * ms, nil, 10 * ms},
		{10*ms - 1, nil, 10 * ms},
		{10 * ms, []int{0}, 12 * ms},
		{11 * ms, nil, 12 * ms},
		{12 * ms, []int{1, 2}, 20 * ms},
		{30 * ms, []int{3}, 0},
		{40 * ms, nil, 0},
	}
	for _, s := range steps {
		n, next, closed := l.popDue(s.now, out)
		if !slices.Equal(out[:n], s.want) || next != s.next || closed {
			t.Errorf("popDue(%v) = %v, next %v, closed %v; want %v, next %v", time.Duration(s.now), out[:n], time.Duration(next), closed, s.want, time.Duration(s.next))
		}
	}
	// A batch smaller than what is due leaves the rest for the next call.
	for i := range 5 {
		l.push(10+i, 50*ms)
	}
	small := make([]int, 2)
	var got []int
	for {
		n, _, _ := l.popDue(50*ms, small)
		if n == 0 {
			break
		}
		got = append(got, small[:n]...)
	}
	if !slices.Equal(got, []int{10, 11, 12, 13, 14}) {
		t.Errorf("batches of 2 gave %v, want 10..14", got)
	}
}

// TestDelayLineBound protects the line's bound: a full line refuses, room
// comes back as packets leave, the ring grows past its first size up to the
// limit and no further, and a closed line refuses and flushes.
func TestDelayLineBound(t *testing.T) {
	l := newDelayLine[int](200)
	for i := range 200 {
		if !l.push(i, aqm.Time(i+1)) {
			t.Fatalf("push %d of 200 refused", i)
		}
	}
	if l.push(200, 1000) {
		t.Fatal("a full line took a 201st packet")
	}
	if len(l.ring) != 200 {
		t.Errorf("ring grew to %d slots, want the limit 200", len(l.ring))
	}
	out := make([]int, 1)
	if n, _, _ := l.popDue(1, out); n != 1 || out[0] != 0 {
		t.Fatalf("popDue = %d %v", n, out)
	}
	if !l.push(200, 1000) {
		t.Fatal("a line with room refused")
	}
	if l.len() != 200 {
		t.Errorf("len %d, want 200", l.len())
	}
	l.close()
	if l.push(201, 1000) {
		t.Error("a closed line took a packet")
	}
	var flushed []int
	if n := l.flush(func(v int) { flushed = append(flushed, v) }); n != 200 || flushed[0] != 1 || flushed[199] != 200 {
		t.Errorf("flush = %d, %v...%v; want 200 packets 1..200", n, flushed[0], flushed[len(flushed)-1])
	}
	if _, next, closed := l.popDue(1<<40, out); next != 0 || !closed {
		t.Errorf("after flush: next %v closed %v; want empty and closed", next, closed)
	}
	if one := newDelayLine[int](0); !one.push(1, 1) || one.push(2, 2) {
		t.Error("a line of limit 0 must hold exactly one packet")
	}
}

// TestDelayLineRun protects the running line: each packet is sent at its
// absolute deadline, not later, whatever the gaps between arrivals, and run
// returns once the closed line is empty. Under synctest time advances only
// when every goroutine is blocked, so a spinning run would hang the test.
func TestDelayLineRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.Since(time.Now())
		l := newDelayLine[int](16)
		const delay = 10 * time.Millisecond
		type sent struct {
			v  int
			at aqm.Time
		}
		var got []sent
		done := make(chan error)
		go func() {
			done <- l.run(context.Background(), clk, 4, func(vs []int) {
				for _, v := range vs {
					got = append(got, sent{v, clk.Now()})
				}
			})
		}()
		var want []sent
		for i, gap := range []time.Duration{0, time.Millisecond, 0, 25 * time.Millisecond, 3 * time.Millisecond} {
			time.Sleep(gap)
			due := clk.Now().Add(delay)
			l.push(i, due)
			want = append(want, sent{i, due})
		}
		time.Sleep(time.Second)
		l.close()
		if err := <-done; err != nil {
			t.Fatalf("run = %v", err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("sent %v, want %v", got, want)
		}
	})
}

// TestDelayLineRunCancel protects the abort path: run returns ctx's error
// when its context ends and leaves the packets held for flush.
func TestDelayLineRunCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.Since(time.Now())
		l := newDelayLine[int](4)
		l.push(1, clk.Now().Add(time.Hour))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := l.run(ctx, clk, 4, func([]int) { t.Error("sent before its deadline") }); err != context.DeadlineExceeded {
			t.Errorf("run = %v, want context.DeadlineExceeded", err)
		}
		if l.len() != 1 {
			t.Errorf("len %d after cancel, want 1", l.len())
		}
	})
}
