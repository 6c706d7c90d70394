package lab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix starts the name of every namespace the lab creates:
// aqmlab-<pid of the creating process>-<random>-<role>. CleanLeftovers
// removes those whose creator is gone.
const Prefix = "aqmlab-"

// The addresses of the lab: all inside the namespaces it creates.
const (
	ClientAddr = "10.201.1.2" // c0, in the client namespace
	RouterC    = "10.201.1.1" // r0, the router's client side
	RouterS    = "10.201.2.1" // r1, the router's server side
	ServerAddr = "10.201.2.2" // s0, in the server namespace
	routeTable = "100"
)

// Path is a longer way from an extra client namespace to the router: a
// delay-only hop in its own namespace adds Extra/2 in each direction, so a
// flow from its client has the base RTT plus Extra. rtt_fair uses these to
// run flows of different base RTTs through one bottleneck at once.
type Path struct {
	Extra  time.Duration
	Client string // client namespace
	Hop    string // hop namespace (runs a delay-only router)
	Addr   string // the client's address, 10.201.(10+k).2
}

// Topology is one set of namespaces: client, router and server joined by
// veth pairs, policy routing in the router namespace as the lab's method
// describes, and any extra Paths.
type Topology struct {
	ID                     string // aqmlab-<pid>-<hex>
	Client, Router, Server string
	Paths                  []Path
	// Offloads has one line per veth with its TSO, GSO and GRO state, as
	// last set and read back ("r/r0: tso off, gso off, gro off").
	Offloads []string
	// KernelOffloads are the veths' offload settings as the kernel
	// created them, read before NewTopology turned them off: what
	// SetOffloads(ctx, true) restores.
	KernelOffloads []string
	// OffloadsOn says whether the veths have the kernel's own offload
	// settings (true) or TSO, GSO and GRO off (false, as NewTopology
	// leaves them).
	OffloadsOn bool
	// Exe is the executable the agents run as (the harness's own).
	Exe string

	created []string // namespaces to delete, in creation order
	// veths are each namespace's veth names; defaults their offload
	// state as the kernel created them (IfOffloads lines).
	veths    map[string][]string
	defaults map[string][]string
}

// Namespaces returns every namespace of t.
func (t *Topology) Namespaces() []string { return append([]string(nil), t.created...) }

// run runs a command with a timeout and returns its combined output; an
// error quotes the command and its output.
func run(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// ip runs `ip ARGS...`.
func ip(ctx context.Context, args ...string) error {
	_, err := run(ctx, 10*time.Second, "ip", args...)
	return err
}

// nsRun runs a command inside namespace ns.
func nsRun(ctx context.Context, ns string, name string, args ...string) (string, error) {
	return run(ctx, 10*time.Second, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// agent runs the lab's own executable as an agent inside ns and waits.
func (t *Topology) agent(ctx context.Context, ns string, args ...string) (string, error) {
	return nsRun(ctx, ns, t.Exe, append([]string{AgentArg}, args...)...)
}

// Preflight reports why the lab cannot run here, or nil.
func Preflight() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the lab needs root (network namespaces, veth, TUN)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("the lab needs iproute2's ip: %v", err)
	}
	if _, err := exec.LookPath("tc"); err != nil {
		return fmt.Errorf("the lab needs iproute2's tc: %v", err)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("the lab needs /dev/net/tun: %v", err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("%s%d-probe", Prefix, os.Getpid())
	if err := ip(ctx, "netns", "add", name); err != nil {
		return fmt.Errorf("cannot create a network namespace: %v", err)
	}
	ip(ctx, "netns", "del", name)
	return nil
}

// NewTopology builds the namespaces, veths, addresses and routes, reads
// the veths' offload settings, turns them off (see SetOffloads), and returns the topology. extras adds one longer
// path per value (see Path). On error everything created is removed.
func NewTopology(ctx context.Context, extras []time.Duration) (t *Topology, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var rnd [3]byte
	rand.Read(rnd[:])
	id := fmt.Sprintf("%s%d-%s", Prefix, os.Getpid(), hex.EncodeToString(rnd[:]))
	t = &Topology{ID: id, Client: id + "-c", Router: id + "-r", Server: id + "-s", Exe: exe}
	defer func() {
		if err != nil {
			t.Close()
			t = nil
		}
	}()
	for _, ns := range []string{t.Client, t.Router, t.Server} {
		if err := t.addNS(ctx, ns); err != nil {
			return t, err
		}
	}
	steps := [][]string{
		{"link", "add", "c0", "netns", t.Client, "type", "veth", "peer", "name", "r0", "netns", t.Router},
		{"link", "add", "s0", "netns", t.Server, "type", "veth", "peer", "name", "r1", "netns", t.Router},
		{"-n", t.Client, "addr", "add", ClientAddr + "/24", "dev", "c0"},
		{"-n", t.Router, "addr", "add", RouterC + "/24", "dev", "r0"},
		{"-n", t.Router, "addr", "add", RouterS + "/24", "dev", "r1"},
		{"-n", t.Server, "addr", "add", ServerAddr + "/24", "dev", "s0"},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return t, err
		}
	}
	if err := t.sysctl(ctx, t.Router, routerSysctls("r0", "r1")...); err != nil {
		return t, err
	}
	for _, s := range [][]string{
		{"-n", t.Client, "link", "set", "c0", "up"},
		{"-n", t.Router, "link", "set", "r0", "up"},
		{"-n", t.Router, "link", "set", "r1", "up"},
		{"-n", t.Server, "link", "set", "s0", "up"},
		{"-n", t.Client, "route", "add", "default", "via", RouterC},
		{"-n", t.Server, "route", "add", "default", "via", RouterS},
		{"-n", t.Router, "rule", "add", "iif", "r0", "table", routeTable},
		{"-n", t.Router, "rule", "add", "iif", "r1", "table", routeTable},
	} {
		if err := ip(ctx, s...); err != nil {
			return t, err
		}
	}
	offl := map[string][]string{t.Client: {"c0"}, t.Router: {"r0", "r1"}, t.Server: {"s0"}}
	for k, extra := range extras {
		p, err := t.addPath(ctx, k, extra)
		if err != nil {
			return t, err
		}
		t.Paths = append(t.Paths, p)
		offl[p.Client] = []string{"c0"}
		offl[p.Hop] = []string{"h0", "h1"}
		offl[t.Router] = append(offl[t.Router], fmt.Sprintf("r%d", 2+k))
	}
	t.veths = offl
	t.defaults = map[string][]string{}
	for _, ns := range t.created {
		if len(offl[ns]) == 0 {
			continue
		}
		out, err := t.agent(ctx, ns, append([]string{"offload", "get"}, offl[ns]...)...)
		if err != nil {
			return t, fmt.Errorf("reading offloads in %s: %v", ns, err)
		}
		t.defaults[ns] = strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range t.defaults[ns] {
			t.KernelOffloads = append(t.KernelOffloads, strings.TrimPrefix(ns, id+"-")+"/"+l)
		}
	}
	if err := t.SetOffloads(ctx, false); err != nil {
		return t, err
	}
	return t, nil
}

// SetOffloads gives every veth of t the kernel's own TSO, GSO and GRO
// settings, as read when t was built (on), or turns all three off (off),
// and keeps the state read back in t.Offloads. Turned off, every queue on
// the path sees packets of at most the MTU; left on, TCP's super-packets
// of up to 64 KiB cross the veths whole, and the router takes them
// through its TUN's offloads.
func (t *Topology) SetOffloads(ctx context.Context, on bool) error {
	var lines []string
	for _, ns := range t.created {
		if len(t.veths[ns]) == 0 {
			continue
		}
		args := append([]string{"offload", "off"}, t.veths[ns]...)
		if on {
			args = append([]string{"offload", "set"}, t.defaults[ns]...)
		}
		out, err := t.agent(ctx, ns, args...)
		if err != nil {
			return fmt.Errorf("setting offloads in %s: %v", ns, err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			lines = append(lines, strings.TrimPrefix(ns, t.ID+"-")+"/"+l)
		}
	}
	t.Offloads, t.OffloadsOn = lines, on
	return nil
}

// routerSysctls are the settings of a forwarding namespace: forwarding on,
// reverse-path filtering off everywhere (packets come back from the TUN
// device with addresses of other interfaces).
func routerSysctls(ifs ...string) []string {
	kv := []string{"net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"}
	for _, i := range ifs {
		kv = append(kv, "net.ipv4.conf."+i+".rp_filter=0")
	}
	return kv
}

func (t *Topology) sysctl(ctx context.Context, ns string, kv ...string) error {
	_, err := t.agent(ctx, ns, append([]string{"sysctl"}, kv...)...)
	return err
}

func (t *Topology) addNS(ctx context.Context, ns string) error {
	if err := ip(ctx, "netns", "add", ns); err != nil {
		return err
	}
	t.created = append(t.created, ns)
	return ip(ctx, "-n", ns, "link", "set", "lo", "up")
}

// addPath adds client namespace pK and hop namespace hK:
//
//	pK c0 10.201.(10+k).2 ── h0 10.201.(10+k).1 [hK: tun0] h1 10.201.(20+k).2 ── rK 10.201.(20+k).1 [router]
func (t *Topology) addPath(ctx context.Context, k int, extra time.Duration) (Path, error) {
	p := Path{Extra: extra, Client: fmt.Sprintf("%s-p%d", t.ID, k), Hop: fmt.Sprintf("%s-h%d", t.ID, k)}
	if err := t.addNS(ctx, p.Client); err != nil {
		return p, err
	}
	if err := t.addNS(ctx, p.Hop); err != nil {
		return p, err
	}
	a, b := 10+k, 20+k
	p.Addr = fmt.Sprintf("10.201.%d.2", a)
	rk := fmt.Sprintf("r%d", 2+k)
	for _, s := range [][]string{
		{"link", "add", "c0", "netns", p.Client, "type", "veth", "peer", "name", "h0", "netns", p.Hop},
		{"link", "add", "h1", "netns", p.Hop, "type", "veth", "peer", "name", rk, "netns", t.Router},
		{"-n", p.Client, "addr", "add", p.Addr + "/24", "dev", "c0"},
		{"-n", p.Hop, "addr", "add", fmt.Sprintf("10.201.%d.1/24", a), "dev", "h0"},
		{"-n", p.Hop, "addr", "add", fmt.Sprintf("10.201.%d.2/24", b), "dev", "h1"},
		{"-n", t.Router, "addr", "add", fmt.Sprintf("10.201.%d.1/24", b), "dev", rk},
	} {
		if err := ip(ctx, s...); err != nil {
			return p, err
		}
	}
	if err := t.sysctl(ctx, p.Hop, routerSysctls("h0", "h1")...); err != nil {
		return p, err
	}
	if err := t.sysctl(ctx, t.Router, "net.ipv4.conf."+rk+".rp_filter=0"); err != nil {
		return p, err
	}
	for _, s := range [][]string{
		{"-n", p.Client, "link", "set", "c0", "up"},
		{"-n", p.Hop, "link", "set", "h0", "up"},
		{"-n", p.Hop, "link", "set", "h1", "up"},
		{"-n", t.Router, "link", "set", rk, "up"},
		{"-n", p.Client, "route", "add", "default", "via", fmt.Sprintf("10.201.%d.1", a)},
		{"-n", p.Hop, "route", "add", "default", "via", fmt.Sprintf("10.201.%d.1", b)},
		{"-n", p.Hop, "rule", "add", "iif", "h0", "table", routeTable},
		{"-n", p.Hop, "rule", "add", "iif", "h1", "table", routeTable},
		{"-n", t.Router, "route", "add", fmt.Sprintf("10.201.%d.0/24", a), "via", fmt.Sprintf("10.201.%d.2", b)},
		{"-n", t.Router, "rule", "add", "iif", rk, "table", routeTable},
	} {
		if err := ip(ctx, s...); err != nil {
			return p, err
		}
	}
	return p, nil
}

// RouteTUN points the policy table of ns at its TUN device, once the
// router program has created it: waits up to 5 s for the device, sets it
// up, turns reverse-path filtering off on it and adds the default route
// of table 100. It gives up at once when exited is closed (the router
// program ended).
func RouteTUN(ctx context.Context, ns, dev string, exited <-chan struct{}) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := nsRun(ctx, ns, "ip", "link", "show", dev); err == nil {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("the router exited before it created %s", dev)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the router created no %s in %s within 5 s", dev, ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ip(ctx, "-n", ns, "link", "set", dev, "up"); err != nil {
		return err
	}
	if _, err := nsRun(ctx, ns, "sh", "-c", "echo 0 > /proc/sys/net/ipv4/conf/"+dev+"/rp_filter"); err != nil {
		return err
	}
	return ip(ctx, "-n", ns, "route", "replace", "default", "dev", dev, "table", routeTable)
}

// Close kills what still runs in the topology's namespaces and deletes
// them (their veths go with them). It is safe to call twice.
func (t *Topology) Close() error {
	var first error
	for i := len(t.created) - 1; i >= 0; i-- {
		if err := removeNS(t.created[i]); err != nil && first == nil {
			first = err
		}
	}
	t.created = nil
	return first
}

func removeNS(ns string) error {
	ctx := context.Background()
	if out, err := run(ctx, 5*time.Second, "ip", "netns", "pids", ns); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	return ip(ctx, "netns", "del", ns)
}

// CleanLeftovers deletes the namespaces named with Prefix whose creating
// process no longer runs (a run that was killed), killing what runs inside
// them first. It returns the names it removed.
func CleanLeftovers() ([]string, error) {
	out, err := run(context.Background(), 10*time.Second, "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], Prefix) {
			continue
		}
		name := f[0]
		pid, ok := CreatorPID(name)
		if ok && pid != os.Getpid() && processAlive(pid) {
			continue
		}
		if ok && pid == os.Getpid() {
			continue
		}
		if err := removeNS(name); err == nil {
			removed = append(removed, name)
		}
	}
	return removed, nil
}

// OtherLabs returns the process ids of other live aqmlab runs (or lab
// tests) that have namespaces now: runs sharing the machine's two cores
// with this one, whose figures are then not comparable with runs alone.
func OtherLabs() []int {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, ok := CreatorPID(e.Name())
		if ok && pid != os.Getpid() && !slices.Contains(pids, pid) && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// CreatorPID reads the creating process's id from a lab namespace name.
func CreatorPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(num)
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
