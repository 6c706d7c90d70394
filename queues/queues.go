// Package queues is the registry of aqmkit's algorithms: every queue by a
// short name, with a one-line description, its reference and a preset sized
// for a link, so that a program can let its user pick a queue from a flag or
// a configuration file.
//
//	q, err := queues.New[[]byte]("fq-codel", queues.Options{Rate: 50 * aqm.Mbit}, nil)
//
// [New] builds the named queue from its link preset; [Spec.Config] returns
// the preset as the algorithm's own configuration type (a [fq.CoDelConfig],
// a [red.Config], …) for a caller that wants to change a field before
// [FromConfig] builds it:
//
//	spec, _ := queues.Lookup("red")
//	c, err := spec.Config(queues.Options{Rate: 10 * aqm.Mbit})
//	cfg := c.(red.Config)
//	cfg.MinThreshold, cfg.MaxThreshold = 5, 15
//	q, err := queues.FromConfig[uint64](cfg, nil)
//
// # Presets
//
// With a Rate, a queue starts from its algorithm's ConfigForLink(Rate, RTT):
// limits of four round trips at the rate (at least 64 KiB), so that one
// unresponsive flow cannot build seconds of queue, and RED's thresholds in
// time. With no Rate, it starts from the algorithm's zero Config, whose
// defaults suit fast links (Linux's). Options then override the limit, seed
// and ECN.
//
// CAKE with a Rate shapes by itself ([Spec.Shapes]): put it behind a front
// at rate 0, or behind no rate limiter at all.
//
// # Names
//
// fifo, red, gentle-red, ared, codel, cobalt, pie, dualpi2, fq-codel,
// fq-cobalt, fq-pie, sfq, cake. [List] gives them in display order with
// their descriptions.
package queues

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/red"
	"github.com/aqmkit/aqmkit/sfq"
)

// ErrUnknown is returned (wrapped, with the name and the known names) by
// [New] for a name the registry does not have.
var ErrUnknown = errors.New("queues: unknown queue")

// Options are the settings every queue in the registry understands. The
// zero value builds each algorithm with its own defaults.
type Options struct {
	// Rate is the link's rate in bits per second. Non-zero, it sizes the
	// limits (and RED's thresholds) with the algorithm's ConfigForLink and
	// makes CAKE shape at it. Zero keeps the algorithm's defaults.
	Rate aqm.Rate
	// RTT is the round-trip time the limits are sized for, with Rate.
	// Zero means 100 ms.
	RTT time.Duration
	// LimitPackets overrides the preset's packet limit. Zero keeps it.
	LimitPackets int
	// Seed seeds the queue's hashing and random decisions. Zero, for
	// production, draws a secret seed from crypto/rand; a fixed seed
	// reproduces every decision. FIFO and CoDel draw no random numbers.
	Seed uint64
	// DisableECN makes an AQM that marks ECN-capable packets drop them
	// instead. It is an error for a queue that cannot turn marking off
	// (DualPI2, CAKE) and has no effect on queues that never mark (FIFO,
	// SFQ).
	DisableECN bool
	// Params changes settings of the algorithm's own configuration after
	// the preset and the options above: comma-separated name=value pairs
	// with the field names of its Config type ("target=5ms,interval=50ms"
	// for CoDel), read as [SetParams] reads them. [Params] lists them.
	Params string
}

// validate reports bad options, one [*aqm.ConfigError] each.
func (o Options) validate() error {
	var errs []error
	if o.RTT < 0 {
		errs = append(errs, &aqm.ConfigError{Pkg: "queues", Field: "RTT", Value: o.RTT, Rule: "must not be negative"})
	}
	if o.LimitPackets < 0 {
		errs = append(errs, &aqm.ConfigError{Pkg: "queues", Field: "LimitPackets", Value: o.LimitPackets, Rule: "must not be negative"})
	}
	return errors.Join(errs...)
}

// Spec describes one queue of the registry.
type Spec struct {
	// Name is the short name New takes, in lower case with hyphens.
	Name string
	// Description says in one line what the queue is and how the preset
	// configures it.
	Description string
	// Reference names the paper, RFC or implementation it follows.
	Reference string
	// Shapes reports that the queue paces its own departures at
	// Options.Rate when one is given (it implements [aqm.Paced]), so that a
	// front in front of it must not limit the rate again.
	Shapes bool
	// Marks reports that the queue marks ECN-capable packets with CE
	// instead of dropping them (unless Options.DisableECN).
	Marks bool

	config func(o Options) (any, error)
}

// Config returns the queue's configuration for o: the algorithm's own
// Config type (fifo.Config, red.Config, fq.CoDelConfig, …) as a value, with
// the preset and o applied, ready for [FromConfig] after any change the
// caller makes. The error names a bad option; the zero Spec has no
// configuration and returns [ErrUnknown].
func (s Spec) Config(o Options) (any, error) {
	if s.config == nil {
		return nil, ErrUnknown
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	c, err := s.config(o)
	if err != nil || o.Params == "" {
		return c, err
	}
	return SetParams(c, o.Params)
}

// size returns the limit the user gave, or else the preset's.
func size(given, preset int) int {
	if given > 0 {
		return given
	}
	return preset
}

func noECNSwitch(name string, o Options) error {
	if o.DisableECN {
		return &aqm.ConfigError{Pkg: "queues", Field: "DisableECN", Value: true, Rule: name + " cannot turn ECN marking off"}
	}
	return nil
}

func redPreset(o Options) red.Config {
	c := red.Config{}
	if o.Rate > 0 {
		c = red.ConfigForLink(o.Rate, o.RTT) // a rate past RED's bound is taken as the bound
	}
	c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
	c.Seed, c.DisableECN = o.Seed, o.DisableECN
	return c
}

// registry is the one list of every algorithm, in display order.
var registry = []Spec{
	{Name: "fifo", Description: "drop-tail FIFO, the baseline (Linux pfifo); with a rate, four round trips of buffer",
		Reference: "Linux pfifo, bfifo",
		config: func(o Options) (any, error) {
			c := fifo.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			return c, nil
		}},
	{Name: "red", Description: "Random Early Detection with thresholds from the link rate, ECN", Reference: "Floyd & Jacobson 1993", Marks: true,
		config: func(o Options) (any, error) { return redPreset(o), nil }},
	{Name: "gentle-red", Description: "Gentle RED: drop probability ramps to 1 between max_th and 2·max_th", Reference: "Floyd 2000", Marks: true,
		config: func(o Options) (any, error) {
			c := redPreset(o)
			c.Gentle = true
			return c, nil
		}},
	{Name: "ared", Description: "Adaptive RED: gentle, max_p adapted to keep the average between the thresholds", Reference: "Floyd, Gummadi & Shenker 2001", Marks: true,
		config: func(o Options) (any, error) {
			c := redPreset(o)
			c.Gentle, c.Adaptive = true, true
			return c, nil
		}},
	{Name: "codel", Description: "CoDel: drops or marks once sojourn stays above 5 ms for 100 ms", Reference: "RFC 8289", Marks: true,
		config: func(o Options) (any, error) {
			c := codel.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.DisableECN = o.DisableECN
			return c, nil
		}},
	{Name: "cobalt", Description: "COBALT: CoDel with BLUE for unresponsive flows, the AQM inside CAKE", Reference: "Høiland-Jørgensen, Täht & Morton 2018", Marks: true,
		config: func(o Options) (any, error) {
			c := cobalt.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed, c.DisableECN = o.Seed, o.DisableECN
			return c, nil
		}},
	{Name: "pie", Description: "PIE: drop probability from the queue delay, target 15 ms, ECN below 10 %", Reference: "RFC 8033", Marks: true,
		config: func(o Options) (any, error) {
			c := pie.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed, c.DisableECN = o.Seed, o.DisableECN
			return c, nil
		}},
	{Name: "dualpi2", Description: "DualPI2: the L4S DualQ Coupled AQM, ECT(1) to the low-latency queue", Reference: "RFC 9332", Marks: true,
		config: func(o Options) (any, error) {
			c := dualq.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed = o.Seed
			return c, noECNSwitch("dualpi2", o)
		}},
	{Name: "fq-codel", Description: "FQ-CoDel: 1024 flow queues served by DRR++, CoDel in each", Reference: "RFC 8290", Marks: true,
		config: func(o Options) (any, error) {
			c := fq.CoDelConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed, c.DisableECN = o.Seed, o.DisableECN
			return c, nil
		}},
	{Name: "fq-cobalt", Description: "FQ-COBALT: the DRR++ flow queues with COBALT in each", Reference: "ns-3 FqCobaltQueueDisc", Marks: true,
		config: func(o Options) (any, error) {
			c := fq.CobaltConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed, c.DisableECN = o.Seed, o.DisableECN
			return c, nil
		}},
	{Name: "fq-pie", Description: "FQ-PIE: the DRR++ flow queues with PIE in each", Reference: "Linux sch_fq_pie", Marks: true,
		config: func(o Options) (any, error) {
			c := fq.PIEConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed, c.DisableECN = o.Seed, o.DisableECN
			return c, nil
		}},
	{Name: "sfq", Description: "Stochastic Fair Queueing: hashed flows served round robin, no AQM", Reference: "McKenney 1990; Linux sch_sfq",
		config: func(o Options) (any, error) {
			c := sfq.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed = o.Seed
			return c, nil
		}},
	{Name: "cake", Description: "CAKE: its own shaper at the rate, diffserv tins, per-host fairness, COBALT per flow", Reference: "Høiland-Jørgensen, Täht & Morton 2018; Linux sch_cake", Shapes: true, Marks: true,
		config: func(o Options) (any, error) {
			c := cake.ConfigForLink(o.Rate, o.RTT) // a zero rate gives the defaults
			c.LimitPackets = size(o.LimitPackets, c.LimitPackets)
			c.Seed = o.Seed
			return c, noECNSwitch("cake", o)
		}},
}

// List returns every queue of the registry, in display order: the baseline,
// the single-queue AQMs, then the fair queues.
func List() []Spec { return slices.Clone(registry) }

// Names returns the names [New] accepts, in display order.
func Names() []string {
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the queue called name (case-insensitive; "_" may stand for
// "-", as in tc's fq_codel).
func Lookup(name string) (Spec, bool) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	for _, s := range registry {
		if s.Name == n {
			return s, true
		}
	}
	return Spec{}, false
}

// New builds the queue called name with o applied to its preset. onDrop
// receives the packets the queue drops after accepting them; it may be nil.
// The error wraps [ErrUnknown] for an unknown name and
// [aqm.ErrInvalidConfig] for bad options.
func New[T any](name string, o Options, onDrop aqm.DropFunc[T]) (aqm.Queue[T], error) {
	s, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	cfg, err := s.Config(o)
	if err != nil {
		return nil, err
	}
	return FromConfig(cfg, onDrop)
}

// FromConfig builds the queue that cfg configures: cfg is one of the
// algorithms' Config types (fifo.Config, red.Config, codel.Config,
// cobalt.Config, pie.Config, dualq.Config, fq.CoDelConfig,
// fq.CobaltConfig, fq.PIEConfig, sfq.Config, cake.Config), as a value. The
// configuration is validated as the algorithm's New does.
func FromConfig[T any](cfg any, onDrop aqm.DropFunc[T]) (aqm.Queue[T], error) {
	switch c := cfg.(type) {
	case fifo.Config:
		return built[T](fifo.New(c, onDrop))
	case red.Config:
		return built[T](red.New(c, onDrop))
	case codel.Config:
		return built[T](codel.New(c, onDrop))
	case cobalt.Config:
		return built[T](cobalt.New(c, onDrop))
	case pie.Config:
		return built[T](pie.New(c, onDrop))
	case dualq.Config:
		return built[T](dualq.New(c, onDrop))
	case fq.CoDelConfig:
		return built[T](fq.NewCoDel(c, onDrop))
	case fq.CobaltConfig:
		return built[T](fq.NewCobalt(c, onDrop))
	case fq.PIEConfig:
		return built[T](fq.NewPIE(c, onDrop))
	case sfq.Config:
		return built[T](sfq.New(c, onDrop))
	case cake.Config:
		return built[T](cake.New(c, onDrop))
	}
	return nil, fmt.Errorf("%w: queues: %T is not a queue configuration", aqm.ErrInvalidConfig, cfg)
}

// built returns a nil queue with an error, never a typed nil pointer in a
// non-nil interface.
func built[T any](q aqm.Queue[T], err error) (aqm.Queue[T], error) {
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Name is a queue name that only a registry name can be set to: a
// [flag.Value] for a program's -aqm flag, and an [encoding.TextUnmarshaler]
// for a name read from a configuration file.
//
//	name := queues.Name("fq-codel")
//	flag.Var(&name, "aqm", "queue: "+strings.Join(queues.Names(), ", "))
type Name string

// Set sets n to the registry's spelling of s, or returns an error that
// wraps [ErrUnknown] and lists the known names.
func (n *Name) Set(s string) error {
	spec, ok := Lookup(s)
	if !ok {
		return fmt.Errorf("%w %q (known: %s)", ErrUnknown, s, strings.Join(Names(), ", "))
	}
	*n = Name(spec.Name)
	return nil
}

// String returns the name.
func (n Name) String() string { return string(n) }

// UnmarshalText is Set for encoding packages.
func (n *Name) UnmarshalText(b []byte) error { return n.Set(string(b)) }

// MarshalText returns the name.
func (n Name) MarshalText() ([]byte, error) { return []byte(n), nil }
