// Command timerlag measures how late a Go timer fires on this machine: it
// sleeps -interval (1.2 ms, a shaping router's wait for one 1500-byte
// packet at 50 Mb/s plus its 1 ms wake slack) over and over for -for and
// prints the distribution of the oversleep in one line (lab.TimerLag). A
// shaping router wakes on such a timer, so on a busy machine this
// lateness is what its queue and its rate absorb (see docs/results/lab.md). aqmlab
// measures the same during every run. Run it at the lab's niceness:
//
//	nice -n -10 timerlag -for 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aqmkit/aqmkit/lab"
)

func main() {
	span := flag.Duration("for", 10*time.Second, "how long to measure (at most 10 minutes)")
	interval := flag.Duration("interval", lab.TimerLagInterval, "each sleep (10 µs to 1 s)")
	flag.Parse()
	if *span <= 0 || *span > 10*time.Minute || *interval < 10*time.Microsecond || *interval > time.Second {
		fmt.Fprintln(os.Stderr, "timerlag: -for must be in (0, 10m] and -interval in [10µs, 1s]")
		os.Exit(2)
	}
	fmt.Println(lab.MeasureTimerLag(context.Background(), *span, *interval))
}
