// Package aqmsel builds the queue an example program's -aqm flag names, with
// each algorithm's link preset when a rate is given.
package aqmsel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/red"
	"github.com/aqmkit/aqmkit/sfq"
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
		cfg := fifo.Config{}
		if o.Rate > 0 {
			cfg = fifo.ConfigForLink(o.Rate, 0)
		}
		cfg.LimitPackets = orLimit(o.LimitPackets, cfg.LimitPackets)
		return fifo.New(cfg, onDrop)
	},
	"codel": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := codel.Config{}
		if o.Rate > 0 {
			cfg = codel.ConfigForLink(o.Rate, 0)
		}
		cfg.LimitPackets = orLimit(o.LimitPackets, cfg.LimitPackets)
		return codel.New(cfg, onDrop)
	},
	"fq-codel": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := fq.CoDelConfig{}
		if o.Rate > 0 {
			cfg = fq.CoDelConfigForLink(o.Rate, 0)
		}
		cfg.LimitPackets, cfg.Seed = orLimit(o.LimitPackets, cfg.LimitPackets), o.Seed
		return fq.NewCoDel(cfg, onDrop)
	},
	"sfq": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := sfq.Config{}
		if o.Rate > 0 {
			cfg = sfq.ConfigForLink(o.Rate, 0)
		}
		cfg.LimitPackets, cfg.Seed = orLimit(o.LimitPackets, cfg.LimitPackets), o.Seed
		return sfq.New(cfg, onDrop)
	},
	"pie": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := pie.Config{}
		if o.Rate > 0 {
			cfg = pie.ConfigForLink(o.Rate, 0)
		}
		cfg.LimitPackets, cfg.Seed = orLimit(o.LimitPackets, cfg.LimitPackets), o.Seed
		return pie.New(cfg, onDrop)
	},
	"dualpi2": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := dualq.Config{}
		if o.Rate > 0 {
			cfg = dualq.ConfigForLink(o.Rate, 0)
		}
		cfg.LimitPackets, cfg.Seed = orLimit(o.LimitPackets, cfg.LimitPackets), o.Seed
		return dualq.New(cfg, onDrop)
	},
	"red": func(o Options, onDrop aqm.DropFunc[uint32]) (aqm.Queue[uint32], error) {
		cfg := red.Config{}
		if o.Rate > 0 {
			cfg = red.ConfigForLink(min(o.Rate, red.MaxLinkRate), 0)
		}
		cfg.Gentle, cfg.Adaptive, cfg.Seed = true, true, o.Seed
		cfg.LimitPackets = orLimit(o.LimitPackets, cfg.LimitPackets)
		return red.New(cfg, onDrop)
	},
}

// orLimit returns the limit the user gave, or else the preset's.
func orLimit(given, preset int) int {
	if given > 0 {
		return given
	}
	return preset
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
// With a Rate, the queue starts from its algorithm's link preset
// (ConfigForLink: four round trips of 100 ms at the rate, at least 64 KiB),
// so that one unresponsive flow cannot build seconds of queue; a
// LimitPackets given replaces the preset's packet limit.
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
	if d, ok := q.(interface{ Detail() sfq.Detail }); ok {
		return fmt.Sprintf("%+v", d.Detail())
	}
	return ""
}
