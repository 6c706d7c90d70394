package lab

import (
	"fmt"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Queue says what queues the bottleneck in a run: the router's AQM (by
// its registry name) or a kernel anchor.
type Queue struct {
	// Router is the router's -aqm name (fifo, codel, fq-codel, cake, ...)
	// when the router shapes and queues.
	Router string `json:"router,omitempty"`
	// Limit is the router's packet limit (-limit); 0 keeps its preset.
	Limit int `json:"limit,omitempty"`
	// Params sets fields of the router queue's Config (-params, as
	// name=value,...); "" keeps the preset.
	Params string `json:"params,omitempty"`
	// Name, when set, is the queue's label in reports instead of one made
	// from Router, Limit and Params ("no-guard" for
	// fq-codel[disable-flood-guard=true]).
	Name string `json:"name,omitempty"`
	// Kernel, when set, is the kernel anchor: the router only delays.
	Kernel *KernelQdisc `json:"kernel,omitempty"`
}

// Label names the queue in reports: its Name if set, else "fq-codel",
// "fifo1000", "fq-codel[disable-flood-guard=true]",
// "kernel:htb+pfifo1000".
func (q Queue) Label() string {
	if q.Kernel != nil {
		return "kernel:" + q.Kernel.Label()
	}
	if q.Name != "" {
		return q.Name
	}
	s := q.Router
	if q.Limit > 0 {
		s = fmt.Sprintf("%s%d", q.Router, q.Limit)
	}
	if q.Params != "" {
		s += "[" + q.Params + "]"
	}
	return s
}

// Offload says what a run does with segmentation offloads.
type Offload struct {
	// Veth leaves TSO, GSO and GRO on every veth as the kernel sets them
	// when it creates the pair (true); false turns all three off, so that
	// every queue sees packets of at most the MTU. With them on, TCP's
	// super-packets of up to 64 KiB reach the router whole through its
	// TUN's offloads (aqmrouter -offload, its default).
	Veth bool `json:"veth"`
	// GSO, when set, is passed to the router as -gso: auto (keep a
	// super-packet whole when its segments take at most 2 ms at the rate,
	// split a longer one), split or keep (queued whole, counted as their
	// segments). "" keeps the router's default, auto.
	GSO string `json:"gso,omitempty"`
}

// GSOPolicies are the values of Offload.GSO (besides "").
var GSOPolicies = []string{"auto", "split", "keep"}

// Label is "" for offloads off with the router's default policy, else
// "+offload" for the veths' offloads on and "+gso-POLICY" for a policy:
// "+offload+gso-keep".
func (o Offload) Label() string {
	s := ""
	if o.Veth {
		s += "+offload"
	}
	if o.GSO != "" {
		s += "+gso-" + o.GSO
	}
	return s
}

// String is the offload as ParseOffloads reads it: "off", "on",
// "on:keep".
func (o Offload) String() string {
	s := "off"
	if o.Veth {
		s = "on"
	}
	if o.GSO != "" {
		s += ":" + o.GSO
	}
	return s
}

// ParseOffloads reads aqmlab's -offloads: a comma-separated list of off
// or on (the veths' offloads), each with an optional :POLICY for the
// router's -gso (auto, split, keep): "off,on:auto,on:keep". "" is off.
func ParseOffloads(s string) ([]Offload, error) {
	if strings.TrimSpace(s) == "" {
		return []Offload{{}}, nil
	}
	var out []Offload
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		veth, gso, _ := strings.Cut(f, ":")
		var o Offload
		switch veth {
		case "off":
		case "on":
			o.Veth = true
		default:
			return nil, fmt.Errorf("%q: want off or on, with an optional :auto, :split or :keep", f)
		}
		if strings.Contains(f, ":") {
			ok := false
			for _, p := range GSOPolicies {
				ok = ok || gso == p
			}
			if !ok {
				return nil, fmt.Errorf("%q: GSO policy %q is not auto, split or keep", f, gso)
			}
			o.GSO = gso
		}
		for _, prev := range out {
			if prev == o {
				return nil, fmt.Errorf("%q: given twice", f)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// Window is a span of load, as offsets from the run's epoch.
type Window struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// Config is one run's exact configuration; reports carry it whole.
type Config struct {
	Test  string   `json:"test"`
	Queue Queue    `json:"queue"`
	Rate  aqm.Rate `json:"rate"`
	// RTT is the base round-trip time added on the path: the router's
	// delay line holds each packet RTT/2 per direction.
	RTT time.Duration `json:"rtt_ns"`
	ECN bool          `json:"ecn"` // net.ipv4.tcp_ecn = 1 in the client and server namespaces (else 0)
	// Idle is the probe-only span before the first load window, whose
	// median RTT is the idle latency.
	Idle time.Duration `json:"idle_ns"`
	// Warmup is left out of every load window's start for the latency
	// and goodput figures.
	Warmup time.Duration `json:"warmup_ns"`
	Load   []Window      `json:"load"`
	// Tail is the probe-only span after the last window (recovery).
	Tail          time.Duration `json:"tail_ns"`
	Flows         []FlowSpec    `json:"flows"`
	Floods        []FloodSpec   `json:"floods,omitempty"`
	ProbeInterval time.Duration `json:"probe_interval_ns"`
	// Paths are extra client paths with these added RTTs (rtt_fair); a
	// flow's Path k+1 runs from path k's client.
	Paths []time.Duration `json:"paths,omitempty"`
	// Offload is the run's segmentation offloads: the veths' and the
	// router's policy for super-packets.
	Offload Offload `json:"offload"`
	// RouterExtra are flags passed verbatim to the router.
	RouterExtra []string `json:"router_extra,omitempty"`
	// Moving, if set, is a kernel htb on r1 after the router whose rate
	// follows a schedule (see Moving).
	Moving *Moving `json:"moving,omitempty"`
	// Note says what the test is modelled on.
	Note string `json:"note,omitempty"`
	// Flent, if set, names the flent test (rrul, rrul_be, tcp_nup,
	// rtt_fair) that is the run's load instead of the lab's own agents:
	// flent runs in the client namespace against netperf's and irtt's
	// servers in the server namespace, and its ICMP ping is the probe.
	Flent string `json:"flent,omitempty"`
	// FlentStreams is tcp_nup's upload_streams.
	FlentStreams int `json:"flent_streams,omitempty"`
	// FlentCC is the congestion control flent asks netperf for
	// (tcp_cong_control); empty keeps the namespace's default.
	FlentCC string `json:"flent_cc,omitempty"`
	// MaxRun, if set, replaces the 10-minute bound on the run with this
	// one, at most MaxSoakRun, and allows one flood a minute beside the
	// usual four: the bounds of a soak (aqmlab soak).
	MaxRun time.Duration `json:"max_run_ns,omitempty"`
}

// MaxSoakRun is the longest run a configuration may ask for with MaxRun.
const MaxSoakRun = 3 * time.Hour

// Name is the configuration's label within its test.
func (c Config) Name() string {
	s := c.Queue.Label()
	if c.Moving != nil {
		s += c.Moving.Label
	}
	if c.ECN {
		s += "+ecn"
	}
	return s + c.Offload.Label()
}

// End is the offset at which the run's probe stops.
func (c Config) End() time.Duration {
	end := c.Idle
	for _, w := range c.Load {
		end = max(end, w.To)
	}
	for _, f := range c.Flows {
		end = max(end, f.Stop)
	}
	for _, f := range c.Floods {
		end = max(end, f.Stop)
	}
	return end + c.Tail
}

// Validate checks the configuration's bounds: every load is bounded in
// time (at most 10 minutes per run) and in count.
func (c Config) Validate() error {
	if c.Test == "" {
		return fmt.Errorf("lab: Config.Test is empty")
	}
	if c.Queue.Router == "" && c.Queue.Kernel == nil {
		return fmt.Errorf("lab: %s: Config.Queue names no queue", c.Test)
	}
	if c.Rate == 0 {
		return fmt.Errorf("lab: %s: Config.Rate is 0", c.Test)
	}
	bound, floods := 10*time.Minute, 4
	if c.MaxRun > 0 {
		bound = min(c.MaxRun, MaxSoakRun)
		floods += int(bound / time.Minute)
	}
	if c.End() > bound {
		return fmt.Errorf("lab: %s: run of %v is over the %v bound", c.Test, c.End(), bound)
	}
	if len(c.Flows) > 64 || len(c.Floods) > floods {
		return fmt.Errorf("lab: %s: %d flows and %d floods: at most 64 and %d", c.Test, len(c.Flows), len(c.Floods), floods)
	}
	for _, f := range c.Flows {
		if f.Stop <= f.Start || f.Path > len(c.Paths) {
			return fmt.Errorf("lab: %s: flow %d: span %v..%v or path %d out of range", c.Test, f.ID, f.Start, f.Stop, f.Path)
		}
	}
	if g := c.Offload.GSO; g != "" && g != "auto" && g != "split" && g != "keep" {
		return fmt.Errorf("lab: %s: Config.Offload.GSO %q is not auto, split or keep", c.Test, g)
	}
	if c.Flent != "" && len(c.Load) != 1 {
		return fmt.Errorf("lab: %s: a flent run has one load window, not %d", c.Test, len(c.Load))
	}
	if c.Flows == nil && c.Floods == nil && c.Flent == "" {
		return fmt.Errorf("lab: %s: no load", c.Test)
	}
	return nil
}
