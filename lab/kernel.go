package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// A kernel anchor runs the kernel's own qdiscs on the lab's path, in the
// same run as the router's queues: the router only delays (-rate 0) and
// r0 and r1 each get an htb class at the bottleneck rate with the anchor
// qdisc as its child. htb counts the 14-byte Ethernet header on a veth,
// so the class rate is the lab's IP rate × 1514/1500.

// KernelQdisc is one anchor's child qdisc.
type KernelQdisc struct {
	Kind string `json:"kind"` // pfifo, fq_codel, cake, fq_pie, pie, red, netem
	// Limit is the packet limit of pfifo (and netem), or RED's limit in
	// packets of AvgPkt bytes; 0 means the qdisc's default.
	Limit int `json:"limit,omitempty"`
	// Burst, if not 0, is htb's burst and cburst in bytes (tc's default
	// is about one MTU with high-resolution timers).
	Burst int `json:"burst,omitempty"`
	// RED's thresholds in packets (min, max) and mean packet size, and its
	// adaptive mode.
	RedMin   int  `json:"red_min,omitempty"`
	RedMax   int  `json:"red_max,omitempty"`
	AvgPkt   int  `json:"avpkt,omitempty"`
	Adaptive bool `json:"adaptive,omitempty"`
}

// Label names the anchor in reports: "htb+pfifo1000", "htb15k+fq_codel".
func (k KernelQdisc) Label() string {
	s := "htb"
	if k.Burst > 0 {
		s += fmt.Sprintf("%dk", k.Burst/1024)
	}
	s += "+" + k.Kind
	if k.Kind == "red" && k.Adaptive {
		s = strings.Replace(s, "+red", "+ared", 1)
	}
	if k.Limit > 0 && (k.Kind == "pfifo" || k.Kind == "netem") {
		s += fmt.Sprint(k.Limit)
	}
	return s
}

// HTBRate is the htb class rate for an IP rate: rate × 1514/1500.
func HTBRate(rate aqm.Rate) uint64 { return (uint64(rate)*1514 + 749) / 1500 }

// childArgs is the tc argument list of the child qdisc.
func (k KernelQdisc) childArgs(rate aqm.Rate, rtt time.Duration) []string {
	switch k.Kind {
	case "pfifo":
		if k.Limit > 0 {
			return []string{"pfifo", "limit", fmt.Sprint(k.Limit)}
		}
		return []string{"pfifo"}
	case "netem":
		a := []string{"netem", "delay", (rtt / 2).String()}
		if k.Limit > 0 {
			a = append(a, "limit", fmt.Sprint(k.Limit))
		}
		return a
	case "red":
		avg, mn, mx, lim := k.AvgPkt, k.RedMin, k.RedMax, k.Limit
		if avg <= 0 {
			avg = 1000
		}
		if mn <= 0 {
			mn = 5
		}
		if mx <= mn {
			mx = 3 * mn
		}
		if lim <= mx {
			lim = 4 * mx
		}
		burst := (2*mn + mx + 2) / 3
		a := []string{"red", "limit", fmt.Sprint(lim * avg), "min", fmt.Sprint(mn * avg), "max", fmt.Sprint(mx * avg),
			"avpkt", fmt.Sprint(avg), "burst", fmt.Sprint(burst), "bandwidth", fmt.Sprintf("%dbit", uint64(rate)), "probability", "0.1"}
		if k.Adaptive {
			a = append(a, "adaptive")
		}
		return a
	}
	return []string{k.Kind}
}

// ApplyKernel installs htb + the child on dev in ns.
func ApplyKernel(ctx context.Context, ns, dev string, k KernelQdisc, rate aqm.Rate, rtt time.Duration) error {
	ClearKernel(ctx, ns, dev)
	if _, err := nsRun(ctx, ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"); err != nil {
		return err
	}
	cls := []string{"class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", fmt.Sprintf("%dbit", HTBRate(rate)), "quantum", "1514"}
	if k.Burst > 0 {
		cls = append(cls, "burst", fmt.Sprint(k.Burst), "cburst", fmt.Sprint(k.Burst))
	}
	if _, err := nsRun(ctx, ns, "tc", cls...); err != nil {
		return err
	}
	_, err := nsRun(ctx, ns, "tc", append([]string{"qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"}, k.childArgs(rate, rtt)...)...)
	return err
}

// ClearKernel removes the root qdisc of dev (back to the default).
func ClearKernel(ctx context.Context, ns, dev string) {
	nsRun(ctx, ns, "tc", "qdisc", "del", "dev", dev, "root")
}

// QdiscStats is a qdisc's counters from `tc -s -j qdisc show`.
type QdiscStats struct {
	Kind       string `json:"kind"`
	Parent     string `json:"parent,omitempty"`
	Packets    int64  `json:"packets"`
	Drops      int64  `json:"drops"`
	Overlimits int64  `json:"overlimits"`
	Requeues   int64  `json:"requeues"`
	Backlog    int64  `json:"backlog"`
	Qlen       int64  `json:"qlen"`
	Marked     int64  `json:"marked,omitempty"` // from xstats where the qdisc reports ECN marks
}

// KernelStats reads the counters of every qdisc on dev.
func KernelStats(ctx context.Context, ns, dev string) ([]QdiscStats, error) {
	out, err := nsRun(ctx, ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev)
	if err != nil {
		return nil, err
	}
	return parseQdiscJSON([]byte(out))
}

func parseQdiscJSON(b []byte) ([]QdiscStats, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("tc -j: %v", err)
	}
	var out []QdiscStats
	for _, r := range raw {
		var q QdiscStats
		b, _ := json.Marshal(r)
		json.Unmarshal(b, &q)
		// ECN marks live under different names per qdisc.
		for _, k := range []string{"ecn_mark", "marked", "ecn_marked"} {
			if v, ok := r[k]; ok {
				json.Unmarshal(v, &q.Marked)
			}
		}
		if xs, ok := r["xstats"]; ok {
			var x map[string]json.RawMessage
			if json.Unmarshal(xs, &x) == nil {
				for _, k := range []string{"ecn_mark", "marked", "ecn_marked"} {
					if v, ok := x[k]; ok {
						json.Unmarshal(v, &q.Marked)
					}
				}
			}
		}
		out = append(out, q)
	}
	return out, nil
}

// DetectKernel tries each kind as the root qdisc of dev in ns and returns
// the kinds the kernel has and, for the others, why not ("Specified qdisc
// kind is unknown" on a kernel built without it).
func DetectKernel(ctx context.Context, ns, dev string, kinds []string) (have []string, missing map[string]string) {
	missing = map[string]string{}
	for _, kind := range kinds {
		k := KernelQdisc{Kind: kind}
		ClearKernel(ctx, ns, dev)
		_, err := nsRun(ctx, ns, "tc", append([]string{"qdisc", "add", "dev", dev, "root", "handle", "1:"}, k.childArgs(10*aqm.Mbit, 20*time.Millisecond)...)...)
		ClearKernel(ctx, ns, dev)
		if err != nil {
			msg := err.Error()
			if i := strings.LastIndex(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
			missing[kind] = msg
			continue
		}
		have = append(have, kind)
	}
	return have, missing
}

// KernelKinds are the anchors the lab tries, in report order.
var KernelKinds = []string{"pfifo", "fq_codel", "cake", "fq_pie", "pie", "red", "netem"}
