package lab

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"golang.org/x/sys/unix"
)

// The stand-in router is a deliberately small TUN router inside the lab:
// a tail-drop FIFO per direction, a serializer at the configured rate and
// a delay line after it, with aqmrouter's flags and -stats file. It lets
// the harness run where aqmrouter is not built (`-router standin`), and
// it serves as the delay-only hop of the kernel anchors and of rtt_fair's
// longer paths. It knows only -aqm fifo.

// RouterStats is the router's final counters (the -stats file), summed
// over both directions. Every packet read is written, dropped or still
// queued at exit: Read = Written + Dropped + Queued.
type RouterStats struct {
	Read    int64 `json:"read"`
	Written int64 `json:"written"`
	Dropped int64 `json:"dropped"`
	Marked  int64 `json:"marked"`
	Queued  int64 `json:"queued"`
}

// StandinMain runs the stand-in router until SIGTERM or SIGINT.
func StandinMain(args []string) error {
	fs := flag.NewFlagSet("standin", flag.ContinueOnError)
	tun := fs.String("tun", "tun0", "TUN device to create")
	name := fs.String("aqm", "fifo", "queue (the stand-in has only fifo)")
	var rate aqm.Rate
	fs.Var(&rate, "rate", "bottleneck rate per direction; 0 = no shaping")
	delay := fs.Duration("delay", 0, "delay added per direction after the queue")
	stats := fs.String("stats", "", "write final counters as JSON here at exit")
	fs.String("metrics", "", "ignored by the stand-in")
	limit := fs.Int("limit", 1000, "FIFO limit in packets")
	upPrefix := fs.String("up", "10.201.2.0/24", "destinations of the upload direction")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name != "fifo" {
		return fmt.Errorf("standin: -aqm %q: the stand-in router has only fifo", *name)
	}
	up, err := netip.ParsePrefix(*upPrefix)
	if err != nil {
		return fmt.Errorf("standin: -up: %v", err)
	}
	f, err := openTUN(*tun)
	if err != nil {
		return err
	}
	sig, stopSig := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dirs := [2]*standinDir{}
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = &standinDir{in: make(chan []byte, 8192), out: f, rate: rate, delay: *delay, limit: *limit}
		wg.Add(1)
		go func() { defer wg.Done(); dirs[i].run(ctx) }()
	}
	var read, dropped atomic.Int64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			buf := make([]byte, 2048)
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			read.Add(1)
			d := 1
			if n >= 20 && buf[0]>>4 == 4 && up.Contains(netip.AddrFrom4([4]byte(buf[16:20]))) {
				d = 0
			}
			select {
			case dirs[d].in <- buf[:n]:
			default:
				dropped.Add(1)
			}
		}
	}()
	select {
	case <-sig.Done():
	case <-readerDone:
	}
	// Stop reading first, then the queues, so that every packet read is
	// counted once: written, dropped or queued.
	f.SetReadDeadline(time.Now())
	<-readerDone
	cancel()
	wg.Wait()
	st := RouterStats{Read: read.Load(), Dropped: dropped.Load()}
	for _, d := range dirs {
		st.Written += d.written
		st.Dropped += d.dropped
		st.Queued += d.queued
	}
	f.Close()
	if *stats != "" {
		b, _ := json.MarshalIndent(st, "", "  ")
		return os.WriteFile(*stats, append(b, '\n'), 0o644)
	}
	return nil
}

type standinPkt struct {
	b   []byte
	due time.Time
}

type standinDir struct {
	in    chan []byte
	out   *os.File
	rate  aqm.Rate
	delay time.Duration
	limit int
	// set by run when it returns
	written, dropped, queued int64
}

func (d *standinDir) run(ctx context.Context) {
	var q [][]byte        // the FIFO
	var line []standinPkt // the delay line, deadlines in order
	var linkFree time.Time
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	for {
		now := time.Now()
		// Serialize every packet whose transmission starts by now.
		for len(q) > 0 && !linkFree.After(now) {
			p := q[0]
			q[0] = nil
			q = q[1:]
			fin := linkFree
			if d.rate > 0 {
				fin = linkFree.Add(d.rate.TxTime(int64(len(p))))
			}
			linkFree = fin
			line = append(line, standinPkt{p, fin.Add(d.delay)})
		}
		for len(line) > 0 && !line[0].due.After(now) {
			if _, err := d.out.Write(line[0].b); err == nil {
				d.written++
			} else {
				d.dropped++
			}
			line[0] = standinPkt{}
			line = line[1:]
		}
		var wake time.Time
		if len(q) > 0 {
			wake = linkFree
		}
		if len(line) > 0 && (wake.IsZero() || line[0].due.Before(wake)) {
			wake = line[0].due
		}
		if !wake.IsZero() {
			tm.Reset(time.Until(wake))
		} else {
			tm.Reset(time.Hour)
		}
		select {
		case <-ctx.Done():
			d.queued = int64(len(q) + len(line) + len(d.in))
			return
		case p := <-d.in:
			now := time.Now()
			if len(q) == 0 && linkFree.Before(now) {
				linkFree = now
			}
			if len(q) >= d.limit {
				d.dropped++
			} else {
				q = append(q, p)
			}
		case <-tm.C:
		}
	}
}

// openTUN creates a TUN device (IFF_TUN | IFF_NO_PI) and returns it as a
// pollable file. The device is attached (TUNSETIFF) before the file joins
// Go's poller: a TUN file polled while unattached never reports readiness.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tun: %v", err)
	}
	var ifr struct {
		name  [unix.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], name)
	ifr.flags = unix.IFF_TUN | unix.IFF_NO_PI
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: TUNSETIFF %s: %v", name, e)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: %v", err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}

var errNoStats = errors.New("lab: the router wrote no -stats file")
