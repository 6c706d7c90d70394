package lab

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AgentArg is the first argument that makes a lab binary (aqmlab or a test
// binary) act as an agent inside a namespace: the harness runs
// `ip netns exec NS <its own executable> __aqmlab_agent ROLE ...`.
const AgentArg = "__aqmlab_agent"

// MaybeAgent runs the agent and exits when os.Args asks for it; it returns
// at once otherwise. main and TestMain call it first.
func MaybeAgent() {
	if len(os.Args) > 1 && os.Args[1] == AgentArg {
		os.Exit(AgentMain(os.Args[2:]))
	}
}

// AgentMain runs one agent role and returns its exit code: server, client,
// sysctl, offload, standin (the stand-in router) or timerlag.
func AgentMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "aqmlab agent: no role")
		return 2
	}
	var err error
	switch args[0] {
	case "server":
		err = agentServer(args[1:])
	case "client":
		err = agentClient(args[1:])
	case "sysctl":
		err = agentSysctl(args[1:])
	case "offload":
		err = agentOffload(args[1:])
	case "standin":
		err = StandinMain(args[1:])
	case "timerlag":
		err = agentTimerLag(args[1:])
	case "soak":
		err = agentSoak(args[1:])
	default:
		err = fmt.Errorf("unknown role %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab agent:", err)
		return 1
	}
	return 0
}

// agentOffload is the offload role: "get IF...", "off IF..." or "set
// STATE..." (each STATE an IfOffloads line, "c0: tso on, gso on, gro
// off"); it prints the state read back, one line per interface.
func agentOffload(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("offload: want get, off or set")
	}
	var got []IfOffloads
	var err error
	switch args[0] {
	case "get":
		got, err = ReadOffloads(args[1:]...)
	case "off":
		got, err = DisableOffloads(args[1:]...)
	case "set":
		want := make([]IfOffloads, 0, len(args)-1)
		for _, a := range args[1:] {
			o, err := ParseIfOffloads(a)
			if err != nil {
				return err
			}
			want = append(want, o)
		}
		got, err = SetOffloads(want)
	default:
		return fmt.Errorf("offload: unknown action %q (want get, off or set)", args[0])
	}
	for _, o := range got {
		fmt.Println(o)
	}
	return err
}

// agentSysctl writes KEY=VALUE pairs under /proc/sys of the calling
// process's network namespace.
func agentSysctl(kvs []string) error {
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("sysctl %q: want key=value", kv)
		}
		path := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
		if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
			return fmt.Errorf("sysctl %s: %v", k, err)
		}
	}
	return nil
}

// epochTime turns a shared wall-clock epoch into a time.Time that carries
// this process's monotonic clock, so offsets from it are immune to clock
// steps after the start.
func epochTime(unixNs int64) time.Time {
	now := time.Now()
	return now.Add(time.Unix(0, unixNs).Sub(now))
}

// sleepUntil waits until t or until ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sampler records a counter every `every` from epoch until stop.
func sampler(ctx context.Context, epoch time.Time, every, stop time.Duration, n *atomic.Int64) []ByteSample {
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	var out []ByteSample
	for k := time.Duration(0); ; k++ {
		at := epoch.Add(k * every)
		if at.Before(time.Now().Add(-every)) { // joined late: skip missed ticks
			continue
		}
		if !sleepUntil(ctx, at) {
			break
		}
		out = append(out, ByteSample{T: time.Since(epoch), Bytes: n.Load()})
		if k*every >= stop {
			break
		}
	}
	return out
}

func tcpInfo(c *net.TCPConn) *SenderInfo {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	var si *SenderInfo
	rc.Control(func(fd uintptr) {
		ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return
		}
		cc, _ := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		si = &SenderInfo{
			BytesSent: ti.Bytes_sent, BytesRetrans: ti.Bytes_retrans, BytesAcked: ti.Bytes_acked,
			TotalRetrans: ti.Total_retrans, DeliveredCE: ti.Delivered_ce,
			MinRTT: time.Duration(ti.Min_rtt) * time.Microsecond,
			SRTT:   time.Duration(ti.Rtt) * time.Microsecond,
			SndMSS: ti.Snd_mss, CC: strings.TrimRight(cc, "\x00"),
		}
	})
	return si
}

// ---- server ----

type server struct {
	mu    sync.Mutex
	flows map[string]map[int]serverFlow // run -> id -> flow
	sinkP atomic.Int64
	sinkB atomic.Int64
}

// agentServer runs the TCP flow server, the UDP echo and the UDP sink until
// -for has passed or SIGTERM/SIGINT arrives.
func agentServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "10.201.2.2", "address to listen on")
	tcpPort := fs.Int("tcp", 5201, "TCP port for flows and reports")
	udpPort := fs.Int("udp", 5202, "UDP echo port")
	sinkPort := fs.Int("sink", 5203, "UDP sink port")
	life := fs.Duration("for", 10*time.Minute, "exit after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, *life)
	defer cancel2()

	s := &server{flows: map[string]map[int]serverFlow{}}
	ln, err := net.Listen("tcp4", net.JoinHostPort(*addr, strconv.Itoa(*tcpPort)))
	if err != nil {
		return err
	}
	echo, err := net.ListenPacket("udp4", net.JoinHostPort(*addr, strconv.Itoa(*udpPort)))
	if err != nil {
		return err
	}
	sink, err := net.ListenPacket("udp4", net.JoinHostPort(*addr, strconv.Itoa(*sinkPort)))
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		ln.Close()
		echo.Close()
		sink.Close()
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			echo.WriteTo(buf[:n], from)
		}
	}()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := sink.ReadFrom(buf)
			if err != nil {
				return
			}
			s.sinkP.Add(1)
			s.sinkB.Add(int64(n))
		}
	}()
	fmt.Println("ready") // the harness waits for this line
	var wg sync.WaitGroup
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(ctx, c.(*net.TCPConn))
		}()
	}
	wg.Wait()
	return nil
}

func (s *server) store(run string, id int, f serverFlow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flows[run] == nil {
		s.flows[run] = map[int]serverFlow{}
	}
	s.flows[run][id] = f
}

func (s *server) handle(ctx context.Context, c *net.TCPConn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 128<<10)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	var h flowHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return
	}
	epoch := epochTime(h.Epoch)
	const grace = 20 * time.Second // a flow's tail may drain this long after its stop
	switch h.Op {
	case "report":
		s.mu.Lock()
		rep := serverReport{Flows: map[int]serverFlow{}, Sink: SinkCounts{Packets: s.sinkP.Load(), Bytes: s.sinkB.Load()}}
		for _, id := range h.IDs {
			if f, ok := s.flows[h.Run][id]; ok {
				rep.Flows[id] = f
			}
		}
		s.mu.Unlock()
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		json.NewEncoder(c).Encode(rep)
	case "up":
		c.SetReadDeadline(epoch.Add(h.Stop + grace))
		c.SetLinger(0)
		var n atomic.Int64
		sctx, stop := context.WithCancel(ctx)
		done := make(chan []ByteSample, 1)
		go func() { done <- sampler(sctx, epoch, h.Every, h.Stop+grace, &n) }()
		buf := make([]byte, 128<<10)
		var rerr error
		for {
			k, err := br.Read(buf)
			n.Add(int64(k))
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
					rerr = err
				}
				break
			}
		}
		stop()
		samples := <-done
		samples = append(samples, ByteSample{T: time.Since(epoch), Bytes: n.Load()})
		f := serverFlow{Samples: samples, Bytes: n.Load()}
		if rerr != nil {
			f.Err = rerr.Error()
		}
		s.store(h.Run, h.ID, f)
	case "down":
		if h.CC != "" {
			if err := setCC(c, h.CC); err != nil {
				s.store(h.Run, h.ID, serverFlow{Err: err.Error()})
				return
			}
		}
		c.SetWriteDeadline(epoch.Add(h.Stop))
		buf := make([]byte, 128<<10)
		var sent int64
		var werr error
		for time.Since(epoch) < h.Stop {
			k, err := c.Write(buf)
			sent += int64(k)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					werr = err
				}
				break
			}
		}
		f := serverFlow{Bytes: sent, Sender: tcpInfo(c)}
		if werr != nil {
			f.Err = werr.Error()
		}
		s.store(h.Run, h.ID, f)
		c.SetLinger(0) // the load stops at once: what is still buffered is discarded
	}
}

func setCC(c *net.TCPConn, cc string) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("TCP_CONGESTION %q: %v", cc, serr)
	}
	return nil
}

// ---- client ----

// agentClient runs the plan in the file named by its argument and prints
// a ClientResult as JSON on stdout.
func agentClient(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("client: want one plan file")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("plan: %v", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	res := RunPlan(ctx, p)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// RunPlan carries out a plan from inside a client namespace. Every part is
// bounded by the plan's End plus a fixed grace for the tails of flows.
func RunPlan(ctx context.Context, p Plan) ClientResult {
	epoch := epochTime(p.Epoch)
	const grace = 20 * time.Second
	ctx, cancel := context.WithDeadline(ctx, epoch.Add(p.End+grace+10*time.Second))
	defer cancel()
	if p.SampleEvery <= 0 {
		p.SampleEvery = 100 * time.Millisecond
	}
	var res ClientResult
	var mu sync.Mutex
	fail := func(format string, a ...any) {
		mu.Lock()
		res.Errors = append(res.Errors, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	server := net.JoinHostPort(p.Server, strconv.Itoa(p.TCPPort))
	res.Flows = make([]FlowResult, len(p.Flows))
	res.Floods = make([]FloodResult, len(p.Floods))
	var wg sync.WaitGroup
	for i, f := range p.Flows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Flows[i] = runFlow(ctx, p, epoch, server, f)
		}()
	}
	for i, f := range p.Floods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Floods[i] = runFlood(ctx, epoch, p, f)
		}()
	}
	if p.Probe != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr, err := runProbe(ctx, epoch, p, *p.Probe)
			if err != nil {
				fail("probe: %v", err)
			}
			res.Probe = pr
		}()
	}
	wg.Wait()
	// Collect the server's side of every flow.
	var ids []int
	for _, f := range p.Flows {
		ids = append(ids, f.ID)
	}
	// An upload's server side ends when the reset reaches it, behind the
	// bottleneck's queue: ask until every flow is there, for up to 15 s.
	var rep serverReport
	var err error
	for try := 0; try < 30; try++ {
		rep, err = fetchReport(ctx, server, p.Run, ids)
		if err == nil && len(rep.Flows) == len(ids) {
			break
		}
		if !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			break
		}
	}
	if err != nil {
		fail("report: %v", err)
	}
	res.Sink = rep.Sink
	for i := range res.Flows {
		fr := &res.Flows[i]
		sf, ok := rep.Flows[fr.ID]
		if !ok {
			if err == nil {
				fail("flow %d: the server has no report", fr.ID)
			}
			continue
		}
		if sf.Err != "" && fr.Err == "" {
			fr.Err = "server: " + sf.Err
		}
		if fr.Dir == "up" {
			fr.Samples, fr.Bytes = sf.Samples, sf.Bytes
		} else {
			fr.Sender = sf.Sender
		}
	}
	return res
}

func fetchReport(ctx context.Context, server, run string, ids []int) (serverReport, error) {
	var rep serverReport
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp4", server)
	if err != nil {
		return rep, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	h, _ := json.Marshal(flowHeader{Op: "report", Run: run, IDs: ids})
	if _, err := c.Write(append(h, '\n')); err != nil {
		return rep, err
	}
	err = json.NewDecoder(c).Decode(&rep)
	return rep, err
}

func runFlow(ctx context.Context, p Plan, epoch time.Time, server string, f FlowSpec) FlowResult {
	fr := FlowResult{FlowSpec: f}
	if f.Dir != "up" && f.Dir != "down" {
		fr.Err = fmt.Sprintf("dir %q: want up or down", f.Dir)
		return fr
	}
	if !sleepUntil(ctx, epoch.Add(f.Start)) {
		fr.Err = "cancelled before start"
		return fr
	}
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if f.CC != "" && f.Dir == "up" {
				if err := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, f.CC); err != nil {
					serr = fmt.Errorf("TCP_CONGESTION %q: %v", f.CC, err)
					return
				}
			}
			if f.MSS > 0 {
				if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, f.MSS); err != nil {
					serr = fmt.Errorf("TCP_MAXSEG %d: %v", f.MSS, err)
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.DialContext(ctx, "tcp4", server)
	if err != nil {
		fr.Err = err.Error()
		return fr
	}
	c := nc.(*net.TCPConn)
	defer c.Close()
	h, _ := json.Marshal(flowHeader{Op: f.Dir, Run: p.Run, ID: f.ID, CC: f.CC, Epoch: p.Epoch, Stop: f.Stop, Every: p.SampleEvery})
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(append(h, '\n')); err != nil {
		fr.Err = err.Error()
		return fr
	}
	buf := make([]byte, 128<<10)
	if f.Dir == "up" {
		c.SetWriteDeadline(epoch.Add(f.Stop))
		for time.Since(epoch) < f.Stop && ctx.Err() == nil {
			if _, err := c.Write(buf); err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					fr.Err = err.Error()
				}
				break
			}
		}
		fr.Sender = tcpInfo(c)
		c.SetLinger(0) // the load stops at once: a reset, not a drain of the send buffer
		return fr
	}
	var n atomic.Int64
	sctx, stop := context.WithCancel(ctx)
	done := make(chan []ByteSample, 1)
	go func() { done <- sampler(sctx, epoch, p.SampleEvery, f.Stop, &n) }()
	c.SetReadDeadline(epoch.Add(f.Stop))
	for {
		k, err := c.Read(buf)
		n.Add(int64(k))
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, os.ErrDeadlineExceeded) {
				fr.Err = err.Error()
			}
			break
		}
	}
	c.SetLinger(0)
	stop()
	fr.Samples = append(<-done, ByteSample{T: time.Since(epoch), Bytes: n.Load()})
	fr.Bytes = n.Load()
	return fr
}

// probeMagic starts every probe datagram.
const probeMagic = 0x61716d6c // "aqml"

func runProbe(ctx context.Context, epoch time.Time, p Plan, ps ProbeSpec) (*ProbeResult, error) {
	if ps.Interval <= 0 {
		ps.Interval = 10 * time.Millisecond
	}
	if ps.Size < 16 {
		ps.Size = 64
	}
	n := int((ps.Stop-ps.Start)/ps.Interval) + 1
	if n <= 0 || n > 1e6 {
		return nil, fmt.Errorf("probe: %d packets out of range", n)
	}
	c, err := net.Dial("udp4", net.JoinHostPort(p.Server, strconv.Itoa(p.UDPPort)))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res := &ProbeResult{Samples: make([]ProbeSample, n)}
	for i := range res.Samples {
		res.Samples[i].RTT = -1
	}
	var mu sync.Mutex
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		buf := make([]byte, 2048)
		for {
			k, err := c.Read(buf)
			at := time.Since(epoch)
			if err != nil {
				return
			}
			if k < 16 || binary.BigEndian.Uint32(buf) != probeMagic {
				continue
			}
			seq := int(binary.BigEndian.Uint32(buf[4:]))
			sent := time.Duration(binary.BigEndian.Uint64(buf[8:]))
			mu.Lock()
			if seq < len(res.Samples) && res.Samples[seq].RTT < 0 && res.Samples[seq].T == sent {
				res.Samples[seq].RTT = at - sent
			}
			mu.Unlock()
		}
	}()
	pkt := make([]byte, ps.Size)
	binary.BigEndian.PutUint32(pkt, probeMagic)
	sent := 0
	for i := 0; i < n; i++ {
		slot := epoch.Add(ps.Start + time.Duration(i)*ps.Interval)
		if !sleepUntil(ctx, slot) {
			break
		}
		at := time.Since(epoch)
		if time.Since(slot) > ps.Interval/2 {
			// This slot's time has passed (a late start or a stall of the
			// agent): skip it rather than send a burst of catch-up probes.
			res.Samples[i].T = -1
			continue
		}
		binary.BigEndian.PutUint32(pkt[4:], uint32(i))
		binary.BigEndian.PutUint64(pkt[8:], uint64(at))
		mu.Lock()
		res.Samples[i].T = at
		mu.Unlock()
		c.Write(pkt)
		sent++
	}
	// Echoes later than a second are counted lost.
	c.SetReadDeadline(time.Now().Add(time.Second))
	<-recvDone
	mu.Lock()
	defer mu.Unlock()
	kept := res.Samples[:0]
	for _, s := range res.Samples[:min(n, len(res.Samples))] {
		if s.T < 0 || (s.T == 0 && s.RTT < 0) {
			continue // skipped or never reached
		}
		kept = append(kept, s)
		if s.RTT < 0 {
			res.Lost++
		}
	}
	res.Samples = kept
	res.Sent = sent
	return res, nil
}

// agentTimerLag measures timer lateness (MeasureTimerLag) for the span in
// its argument, or until SIGTERM, and prints the TimerLag as JSON.
func agentTimerLag(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("timerlag: want one span")
	}
	span, err := time.ParseDuration(args[0])
	if err != nil || span <= 0 || span > MaxSoakRun+time.Minute {
		return fmt.Errorf("timerlag: span %q: want a duration in (0, %v]", args[0], MaxSoakRun+time.Minute)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	return json.NewEncoder(os.Stdout).Encode(MeasureTimerLag(ctx, span, TimerLagInterval))
}
