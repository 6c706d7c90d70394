// Package aqmsel builds the queue an example program's -aqm flag names, with
// each algorithm's defaults apart from the packet limit.
package aqmsel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/red"
)

// Options are the settings shared by every algorithm.
type Options struct {
	// LimitPackets is the queue's packet limit; zero keeps the algorithm's
	// default.
	LimitPackets int
	// RateBitsPerSec is the bottleneck rate, for algorithms that need it
	// (RED's thresholds in time); zero keeps the default.
	RateBitsPerSec uint64
	// Seed seeds the algorithm's random decisions.
	Seed uint64
}

type builder func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error)

var builders = map[string]builder{
	"fifo": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		return aqm.NewFIFO(aqm.FIFOConfig{LimitPackets: o.LimitPackets}, onDrop)
	},
	"codel": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		return codel.New(codel.Config{LimitPackets: o.LimitPackets}, onDrop)
	},
	"fq-codel": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		return fq.NewCoDel(fq.CoDelConfig{LimitPackets: o.LimitPackets, Seed: o.Seed}, onDrop)
	},
	"sfq": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		return fq.NewSFQ(fq.SFQConfig{LimitPackets: o.LimitPackets, Seed: o.Seed}, onDrop)
	},
	"pie": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		return pie.New(pie.Config{LimitPackets: o.LimitPackets, Seed: o.Seed}, onDrop)
	},
	"dualpi2": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		return dualq.New(dualq.Config{LimitPackets: o.LimitPackets, Seed: o.Seed}, onDrop)
	},
	"red": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := red.Config{LimitPackets: o.LimitPackets, Gentle: true, Adaptive: true, Seed: o.Seed}
		if o.RateBitsPerSec > 0 {
			cfg.LinkRate = aqm.Rate(min(o.RateBitsPerSec, uint64(red.MaxLinkRate)))
		}
		return red.New(cfg, onDrop)
	},
}

// Names returns the algorithm names New accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(builders))
	for n := range builders {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds the queue called name. onDrop receives the packets the queue
// drops after accepting them.
func New(name string, o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("unknown AQM %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return b(o, onDrop)
}

// Detail returns the queue's algorithm-specific state as text, if its type
// has a Detail method.
func Detail(q aqm.Queue[uint32]) string {
	if d, ok := q.(interface{ Detail() codel.Detail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	if d, ok := q.(interface{ Detail() pie.Detail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	if d, ok := q.(interface{ Detail() dualq.Detail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	if d, ok := q.(interface{ Detail() red.Detail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	if d, ok := q.(interface{ Detail() fq.CoDelDetail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	if d, ok := q.(interface{ Detail() fq.SFQDetail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	return ""
}
