// Command timerlag measures how late a Go timer fires on this machine: it
// sleeps -interval (1.2 ms, the router's wait for one 1500-byte packet at
// 50 Mb/s plus its 1 ms wake slack) over and over for -for and prints the
// distribution of the oversleep in one line. A shaping router wakes on
// such a timer, so on a busy machine this lateness is what its queue and
// its rate absorb (see docs/lab.md). Run it at the niceness the lab uses:
//
//	nice -n -10 timerlag -for 10s
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

func main() {
	span := flag.Duration("for", 10*time.Second, "how long to measure (at most 10 minutes)")
	interval := flag.Duration("interval", 1200*time.Microsecond, "each sleep (at least 10 µs)")
	flag.Parse()
	if *span <= 0 || *span > 10*time.Minute || *interval < 10*time.Microsecond || *interval > time.Second {
		fmt.Fprintln(os.Stderr, "timerlag: -for must be in (0, 10m] and -interval in [10µs, 1s]")
		os.Exit(2)
	}
	fmt.Println(summary(measure(*span, *interval), *span))
}

// measure sleeps interval on one reused timer until span has passed and
// returns each sleep's lateness in ms.
func measure(span, interval time.Duration) []float64 {
	var late []float64
	t := time.NewTimer(interval)
	<-t.C
	for end := time.Now().Add(span); time.Now().Before(end); {
		t0 := time.Now()
		t.Reset(interval)
		<-t.C
		late = append(late, float64(time.Since(t0)-interval)/1e6)
	}
	return late
}

// summary describes the lateness: percentiles, the share of wake-ups late
// by more than 1, 2 and 5 ms, and the time lost beyond the first 1 ms of
// each late wake-up in percent of the span (what a token bucket with a
// 2 ms burst and a 1 ms slack cannot make up).
func summary(late []float64, span time.Duration) string {
	if len(late) == 0 {
		return "timerlag: no wake-ups"
	}
	slices.Sort(late)
	n := len(late)
	at := func(p float64) float64 { return late[int(p*float64(n-1))] }
	over := func(ms float64) float64 {
		c := 0
		for _, x := range late {
			if x > ms {
				c++
			}
		}
		return 100 * float64(c) / float64(n)
	}
	lost := 0.0
	for _, x := range late {
		lost += max(x-1, 0)
	}
	return fmt.Sprintf("timer lateness over %d wake-ups: p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.1f ms; late > 1 ms %.1f%%, > 2 ms %.1f%%, > 5 ms %.2f%%; beyond 1 ms: %.1f%% of the time",
		n, at(.5), at(.9), at(.99), at(.999), late[n-1], over(1), over(2), over(5), 100*lost/float64(span.Milliseconds()))
}
