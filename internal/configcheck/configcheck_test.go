package configcheck

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/red"
	"github.com/aqmkit/aqmkit/sfq"
)

// configTypes are every configuration type of the library.
var configTypes = []reflect.Type{
	reflect.TypeFor[fifo.Config](),
	reflect.TypeFor[red.Config](),
	reflect.TypeFor[codel.Config](),
	reflect.TypeFor[pie.Config](),
	reflect.TypeFor[dualq.Config](),
	reflect.TypeFor[fq.CoDelConfig](),
	reflect.TypeFor[sfq.Config](),
	reflect.TypeFor[front.Config](),
	reflect.TypeFor[front.ShardedConfig](),
}

// randomValue fills v (settable) with a value that is often zero, often
// small, sometimes negative and sometimes at the edge of its type, so that
// Validate meets both good and bad fields and every default.
func randomValue(r *rand.Rand, v reflect.Value) {
	pick := r.IntN(8)
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
		x := [...]int64{0, 0, 1, -1, hi, lo, r.Int64N(2000), r.Int64() >> r.IntN(63)}[pick]
		if x < lo || x > hi {
			x = x >> (64 - bits)
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		bits := v.Type().Bits()
		hi := uint64(math.MaxUint64) >> (64 - bits)
		x := [...]uint64{0, 0, 1, hi, hi - 1, r.Uint64N(2000), r.Uint64() >> r.IntN(64), 1 << r.IntN(bits)}[pick]
		v.SetUint(x & hi)
	case reflect.Float32, reflect.Float64:
		v.SetFloat([...]float64{0, 0, 0.5, -1, math.Inf(1), math.NaN(), r.Float64(), 1e300}[pick])
	case reflect.String:
		v.SetString([...]string{"", "", "x", "auto", "-1", "100mbit", "\x00", "a b"}[pick])
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomValue(r, v.Field(i))
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			randomValue(r, v.Index(i))
		}
	case reflect.Slice:
		if pick < 4 {
			return
		}
		s := reflect.MakeSlice(v.Type(), pick-3, pick-3)
		for i := range s.Len() {
			randomValue(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Pointer:
		if pick < 4 {
			return
		}
		p := reflect.New(v.Type().Elem())
		randomValue(r, p.Elem())
		v.Set(p)
	}
}

// snapshot renders a value so that two snapshots are equal exactly when
// the values are (NaN included, unlike ==).
func snapshot(v reflect.Value) string { return fmt.Sprintf("%#v", v.Interface()) }

// TestValidateNeverMutates protects the configuration contract: Validate
// has a value receiver, and whatever the field values, validating a config
// leaves it exactly as it was (defaults are applied elsewhere, never by
// Validate).
func TestValidateNeverMutates(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 12))
	for _, typ := range configTypes {
		t.Run(typ.String(), func(t *testing.T) {
			m, ok := typ.MethodByName("Validate")
			if !ok {
				if _, ptr := reflect.PointerTo(typ).MethodByName("Validate"); ptr {
					t.Errorf("%v.Validate has a pointer receiver; want a value receiver, so that validating cannot change the config", typ)
				} else {
					t.Fatalf("%v has no Validate method", typ)
				}
			} else if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0) != reflect.TypeFor[error]() {
				t.Fatalf("%v.Validate has type %v; want func() error", typ, m.Type)
			}
			mutated := 0
			var first string
			for i := range 2000 {
				p := reflect.New(typ)
				if i > 0 { // the first is the zero config
					randomValue(r, p.Elem())
				}
				before := snapshot(p.Elem())
				p.MethodByName("Validate").Call(nil)
				if after := snapshot(p.Elem()); after != before {
					mutated++
					if first == "" {
						first = fmt.Sprintf("\n\tbefore %s\n\tafter  %s", before, after)
					}
				}
			}
			if mutated > 0 {
				t.Errorf("Validate changed its receiver in %d of 2000 configs, e.g.%s", mutated, first)
			}
		})
	}
}

// queueCase builds one queue type of the library with its zero
// configuration except for the Seed.
type queueCase struct {
	name    string
	cfgType reflect.Type
	build   func(seed uint64) (any, error)
	rebuild func(cfg any) (any, error) // from a config of type cfgType
}

var queueCases = []queueCase{
	{"fifo.Queue", reflect.TypeFor[fifo.Config](), func(uint64) (any, error) { return fifo.New[int](fifo.Config{}, nil) },
		func(c any) (any, error) { return fifo.New[int](c.(fifo.Config), nil) }},
	{"red.Queue", reflect.TypeFor[red.Config](), func(s uint64) (any, error) { return red.New[int](red.Config{Seed: s}, nil) },
		func(c any) (any, error) { return red.New[int](c.(red.Config), nil) }},
	{"codel.Queue", reflect.TypeFor[codel.Config](), func(uint64) (any, error) { return codel.New[int](codel.Config{}, nil) },
		func(c any) (any, error) { return codel.New[int](c.(codel.Config), nil) }},
	{"pie.Queue", reflect.TypeFor[pie.Config](), func(s uint64) (any, error) { return pie.New[int](pie.Config{Seed: s}, nil) },
		func(c any) (any, error) { return pie.New[int](c.(pie.Config), nil) }},
	{"dualq.Queue", reflect.TypeFor[dualq.Config](), func(s uint64) (any, error) { return dualq.New[int](dualq.Config{Seed: s}, nil) },
		func(c any) (any, error) { return dualq.New[int](c.(dualq.Config), nil) }},
	{"fq.CoDel", reflect.TypeFor[fq.CoDelConfig](), func(s uint64) (any, error) { return fq.NewCoDel[int](fq.CoDelConfig{Seed: s}, nil) },
		func(c any) (any, error) { return fq.NewCoDel[int](c.(fq.CoDelConfig), nil) }},
	{"sfq.Queue", reflect.TypeFor[sfq.Config](), func(s uint64) (any, error) { return sfq.New[int](sfq.Config{Seed: s}, nil) },
		func(c any) (any, error) { return sfq.New[int](c.(sfq.Config), nil) }},
	{"front.Front", reflect.TypeFor[front.Config](), func(uint64) (any, error) { return newFront(front.Config{}) },
		func(c any) (any, error) { return newFront(c.(front.Config)) }},
}

func newFront(cfg front.Config) (any, error) {
	q, err := fifo.New[int](fifo.Config{}, nil)
	if err != nil {
		return nil, err
	}
	return front.New[int](q, clock.NewManual(clock.Epoch), cfg)
}

// TestEveryQueueReportsConfig protects Config(): every queue type has it,
// it returns the package's config type, the effective configuration is
// valid, and a queue built from it reports the same configuration (so it
// holds the seed in use, not zero).
func TestEveryQueueReportsConfig(t *testing.T) {
	for _, c := range queueCases {
		t.Run(c.name, func(t *testing.T) {
			q, err := c.build(0)
			if err != nil {
				t.Fatalf("building with the zero configuration: %v", err)
			}
			m := reflect.ValueOf(q).MethodByName("Config")
			if !m.IsValid() {
				t.Fatalf("%s has no Config() method; want Config() %v returning the effective configuration", c.name, c.cfgType)
			}
			if m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0) != c.cfgType {
				t.Fatalf("%s.Config has type %v; want func() %v", c.name, m.Type(), c.cfgType)
			}
			eff := m.Call(nil)[0]
			cp := reflect.New(c.cfgType) // Validate through a pointer: works for either receiver
			cp.Elem().Set(eff)
			if err, _ := cp.MethodByName("Validate").Call(nil)[0].Interface().(error); err != nil {
				t.Errorf("%s.Config() = %s does not validate: %v", c.name, snapshot(eff), err)
			}
			if seed := eff.FieldByName("Seed"); seed.IsValid() && seed.IsZero() {
				t.Errorf("%s built with Seed 0 reports Seed 0 in Config(); want the seed drawn for it", c.name)
			}
			again, err := c.rebuild(eff.Interface())
			if err != nil {
				t.Fatalf("building from Config() = %s: %v", snapshot(eff), err)
			}
			if eff2 := reflect.ValueOf(again).MethodByName("Config").Call(nil)[0]; snapshot(eff2) != snapshot(eff) {
				t.Errorf("a queue built from Config() reports another configuration:\n\tfirst %s\n\tthen  %s", snapshot(eff), snapshot(eff2))
			}
		})
	}
}

// events plays a fixed trace on q: a standing overload, from two flows
// sets and two ECN codepoints, that drives every AQM into its random
// regime, and returns what happened, one byte or payload per event.
func events(q aqm.Queue[int]) []int {
	var out []int
	now := aqm.Time(time.Second)
	seq := 0
	for i := range 6000 {
		now += aqm.Time(400 * time.Microsecond)
		for k := range 2 {
			seq++
			ecn := aqm.NotECT
			if k == 1 && i%2 == 0 {
				ecn = aqm.ECT1
			}
			v := q.Enqueue(aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: uint32(seq % 7), ECN: ecn}}, now)
			out = append(out, int(v))
		}
		if p, ok := q.Dequeue(now); ok {
			out = append(out, p.Payload)
		}
	}
	return out
}

// flowOrder offers one packet for each of n distinct hashes at one instant
// and returns the order in which they come out: arrival order, except
// where two hashes share a flow queue.
func flowOrder(q aqm.Queue[int], n int) []int {
	now := aqm.Time(time.Second)
	for i := range n {
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: uint32(i) * 0x9E3779B1}}, now)
	}
	var out []int
	for {
		p, ok := q.Dequeue(now)
		if !ok {
			return out
		}
		out = append(out, p.Payload)
	}
}

// TestZeroSeedIsSecretFixedSeedReproduces protects the seeding contract:
// two queues built with a zero Seed key their flow hashes (fq.CoDel,
// sfq.Queue) or draw their random decisions (red, pie, dualq) differently,
// while two queues built with the same non-zero Seed behave identically.
func TestZeroSeedIsSecretFixedSeedReproduces(t *testing.T) {
	type probe struct {
		name string
		run  func(q aqm.Queue[int]) []int
	}
	cases := map[string]probe{
		"red.Queue":   {"random decisions under overload", events},
		"pie.Queue":   {"random decisions under overload", events},
		"dualq.Queue": {"random decisions under overload", events},
		"fq.CoDel":    {"flows sharing a queue among 1000 hashes", func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) }},
		"sfq.Queue":   {"flows sharing a bucket among 120 hashes", func(q aqm.Queue[int]) []int { return flowOrder(q, 120) }},
	}
	for _, c := range queueCases {
		pr, ok := cases[c.name]
		if !ok {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			play := func(seed uint64) []int {
				q, err := c.build(seed)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				return pr.run(q.(aqm.Queue[int]))
			}
			a, b := play(7), play(7)
			if !slices.Equal(a, b) {
				t.Errorf("two queues with Seed 7 differ in their %s; a fixed seed must reproduce", pr.name)
			}
			if z1, z2 := play(0), play(0); slices.Equal(z1, z2) {
				t.Errorf("two queues with Seed 0 agree in their %s (%d events); a zero seed must draw a secret key per queue", pr.name, len(z1))
			}
		})
	}
}

// TestProbesSeeSeeds protects the test above from passing vacuously: the
// probes tell two different fixed seeds apart on every queue.
func TestProbesSeeSeeds(t *testing.T) {
	probes := map[string]func(q aqm.Queue[int]) []int{
		"red.Queue":   events,
		"pie.Queue":   events,
		"dualq.Queue": events,
		"fq.CoDel":    func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) },
		"sfq.Queue":   func(q aqm.Queue[int]) []int { return flowOrder(q, 120) },
	}
	for _, c := range queueCases {
		run, ok := probes[c.name]
		if !ok {
			continue
		}
		play := func(seed uint64) []int {
			q, err := c.build(seed)
			if err != nil {
				t.Fatalf("%s seed %d: %v", c.name, seed, err)
			}
			return run(q.(aqm.Queue[int]))
		}
		if slices.Equal(play(1), play(2)) {
			t.Errorf("%s: seeds 1 and 2 give the same probe result; the probe cannot see the seed", c.name)
		}
	}
}
