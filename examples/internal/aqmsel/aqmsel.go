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
	// LimitPackets is the queue's packet limit; zero sizes it for Rate
	// (see New), or keeps the algorithm's default when Rate is zero too.
	LimitPackets int
	// Rate is the bottleneck rate: it sizes the limits, and RED needs it
	// for its thresholds in time. Zero keeps the defaults, which suit
	// 10 GbE and hold seconds of queue on a slow link.
	Rate aqm.Rate
	// Seed seeds the algorithm's hashing and random decisions. Zero (what
	// the example programs use) draws a secret seed at random; a fixed
	// seed is for reproducible tests.
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
		cfg := fq.CoDelConfig{LimitPackets: o.LimitPackets, Seed: o.Seed}
		if o.Rate > 0 {
			// The sizing of the link presets: four RTTs of buffer at the
			// rate, in bytes of memory as well as in packets.
			cfg.MemoryLimitBytes = o.Rate.BufferBytes(0)
		}
		return fq.NewCoDel(cfg, onDrop)
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
		if o.Rate > 0 {
			cfg.LinkRate = min(o.Rate, red.MaxLinkRate)
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
//
// With a Rate and no LimitPackets, the limit is o.Rate.BufferPackets(0):
// four round trips of 100 ms at the rate, at least 64 KiB, the sizing every
// algorithm's link preset uses, so that one unresponsive flow cannot build
// seconds of queue.
func New(name string, o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
	b, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("unknown AQM %q (have %s)", name, strings.Join(Names(), ", "))
	}
	if o.LimitPackets == 0 && o.Rate > 0 {
		o.LimitPackets = o.Rate.BufferPackets(0)
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
