// Command httpadmit is an HTTP server behind an admission front: requests
// queue for one of -workers slots in a CoDel queue, their wait is the
// queue's sojourn time, and a request CoDel drops is answered 503 at once
// instead of waiting out an overload. With -lifo the newest request is served
// first while the queue is overloaded. The demo handler just works for -work.
//
//	httpadmit -listen 127.0.0.1:8080 -workers 8 -work 20ms -lifo
//
// Every response carries its queue wait in the X-Queue-Wait header
// (nanoseconds).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "httpadmit:", err)
		os.Exit(2)
	}
}

// run parses args and serves until ctx ends or -duration passes. ready, if
// not nil, receives the listening address.
func run(ctx context.Context, args []string, out io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("httpadmit", flag.ContinueOnError)
	fs.SetOutput(out)
	var (
		listen   = fs.String("listen", "127.0.0.1:8080", "`address` to serve on")
		workers  = fs.Int("workers", 8, "requests served at once")
		work     = fs.Duration("work", 10*time.Millisecond, "how long the demo handler works per request")
		queue    = fs.String("queue", "codel", "admission queue: codel, or fifo (unbounded, for comparison)")
		lifo     = fs.Bool("lifo", false, "serve the newest request first while the queue is overloaded")
		target   = fs.Duration("target", 5*time.Millisecond, "CoDel target")
		interval = fs.Duration("interval", 20*time.Millisecond, "CoDel interval")
		every    = fs.Duration("stats", time.Second, "statistics `interval`; 0 disables")
		duration = fs.Duration("duration", 0, "stop after this `duration` (for example 30s); 0 runs until interrupted (3s with -demo)")
		demo     = fs.Bool("demo", false, "drive the server itself: a local client sends twice the requests the workers can serve for -duration, then the admitted requests' wait is printed")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "httpadmit serves HTTP behind an admission queue that sheds an overload instead of queueing it.\n\nUsage: httpadmit [flags]\n  httpadmit -demo -queue fifo   # every request waits out the backlog\n  httpadmit -demo               # CoDel keeps the wait short and sheds the rest\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(*work)
		io.WriteString(w, "ok\n")
	})
	adm, err := NewAdmitter(app, AdmitConfig{Workers: *workers, Queue: *queue, LIFO: *lifo, Target: *target, Interval: *interval})
	if err != nil {
		return err
	}
	if *demo && *listen == "127.0.0.1:8080" {
		*listen = "127.0.0.1:0" // the demo's client is told the port
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if *demo {
		if *duration == 0 {
			*duration = 3 * time.Second
		}
		if *work <= 0 {
			ln.Close()
			return errors.New("-demo needs a positive -work")
		}
		perSecond := max(1, int(2*float64(*workers)*float64(time.Second)/float64(*work)))
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		d, addr := *duration, ln.Addr().String()
		go func() {
			load(runCtx, addr, perSecond, d).print(out, perSecond, d)
			cancel()
		}()
		ctx = runCtx
	} else if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	srv := &http.Server{Handler: adm, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(out, "httpadmit: serving on http://%s with %d workers, %s queue, lifo=%v\n", ln.Addr(), *workers, *queue, *lifo)
	if ready != nil {
		ready(ln.Addr().String())
	}
	var wg sync.WaitGroup
	dispatchCtx, stopDispatch := context.WithCancel(context.Background())
	wg.Go(func() { adm.Run(dispatchCtx) })
	wg.Go(func() {
		if *every <= 0 {
			return
		}
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a, s, g := adm.Counts()
				fmt.Fprintf(out, "admitted=%d shed=%d abandoned=%d waiting=%d\n", a, s, g, adm.f.Len())
			}
		}
	})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err = <-serveErr:
	case <-ctx.Done():
		// Stop the dispatcher first: waiting requests get 503 and their
		// handlers return, so Shutdown does not wait out the queue.
		stopDispatch()
		// Longer than the five seconds net/http gives a connection that
		// was accepted but has sent no request before Shutdown counts it
		// as idle.
		shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(shutCtx)
		cancel()
		<-serveErr
	}
	stopDispatch()
	wg.Wait()
	a, s, g := adm.Counts()
	fmt.Fprintf(out, "final: admitted=%d shed=%d abandoned=%d\n", a, s, g)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
