package configcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/keyed"
	"github.com/aqmkit/aqmkit/queues"
)

// configTypes are every configuration type of the library: the queues'
// (from the registry, which lists one per algorithm type), the fronts' and
// the rate controller's.
// TestConfigTypesComplete fails when a package grows one that is missing.
var configTypes = func() []reflect.Type {
	var ts []reflect.Type
	for _, c := range registryConfigs() {
		ts = append(ts, reflect.TypeOf(c))
	}
	return append(ts, reflect.TypeFor[front.Config](), reflect.TypeFor[front.ShardedConfig](), reflect.TypeFor[front.PoolConfig](), reflect.TypeFor[front.IPConfig](), reflect.TypeFor[keyed.Config](), reflect.TypeFor[autorate.Config](), reflect.TypeFor[autorate.PassiveConfig]())
}()

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
	// probe builds it for the seed probes: build, with the flood guard
	// off where the queue has one, since the guard sends a burst of new
	// flows to one shared queue in arrival order, which no key moves.
	probe func(seed uint64) (any, error)
}

// queueCases are every queue type of the registry, and the front.
var queueCases = func() []queueCase {
	var cs []queueCase
	for _, zero := range registryConfigs() {
		typ := reflect.TypeOf(zero)
		build := func(c any) (any, error) { return queues.FromConfig[int](c, nil) }
		cs = append(cs, queueCase{
			name:    typ.String(),
			cfgType: typ,
			build: func(seed uint64) (any, error) {
				v := reflect.New(typ).Elem()
				if f := v.FieldByName("Seed"); f.IsValid() {
					f.SetUint(seed)
				}
				return build(v.Interface())
			},
			rebuild: build,
			probe: func(seed uint64) (any, error) {
				v := reflect.New(typ).Elem()
				if f := v.FieldByName("Seed"); f.IsValid() {
					f.SetUint(seed)
				}
				if f := v.FieldByName("DisableFloodGuard"); f.IsValid() {
					f.SetBool(true)
				}
				return build(v.Interface())
			},
		})
	}
	return append(cs, queueCase{"front.Config", reflect.TypeFor[front.Config](), func(uint64) (any, error) { return newFront(front.Config{}) },
		func(c any) (any, error) { return newFront(c.(front.Config)) }, nil})
}()

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

// flowOrderPairs is flowOrder for a queue with a flood guard (CAKE's),
// which gives a flow queue only to a hash that recurs once its first packet
// has left, and serves the rest from one shared queue in arrival order,
// which no seed moves: each hash sends one packet, the queue drains, and
// the hash sends a second that stays; then everything drains.
func flowOrderPairs(q aqm.Queue[int], n int) []int {
	now := aqm.Time(time.Second)
	var out []int
	drain := func() {
		for {
			p, ok := q.Dequeue(now)
			if !ok {
				return
			}
			out = append(out, p.Payload)
		}
	}
	for i := range n {
		h := uint32(i) * 0x9E3779B1
		q.Enqueue(aqm.Packet[int]{Payload: -i, Meta: aqm.Meta{Size: 1000, Hash: h}}, now)
		drain()
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: h}}, now)
	}
	drain()
	return out
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
		"red.Config":      {"random decisions under overload", events},
		"pie.Config":      {"random decisions under overload", events},
		"dualq.Config":    {"random decisions under overload", events},
		"fq.CoDelConfig":  {"flows sharing a queue among 1000 hashes", func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) }},
		"sfq.Config":      {"flows sharing a bucket among 120 hashes", func(q aqm.Queue[int]) []int { return flowOrder(q, 120) }},
		"fq.CobaltConfig": {"flows sharing a queue among 1000 hashes", func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) }},
		"fq.PIEConfig":    {"flows sharing a queue among 1000 hashes", func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) }},
		"cobalt.Config":   {"random decisions under overload", events},
		"cake.Config":     {"flows sharing a set among 1000 hashes", func(q aqm.Queue[int]) []int { return flowOrderPairs(q, 1000) }},
	}
	for _, c := range queueCases {
		pr, ok := cases[c.name]
		if !ok {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			play := func(seed uint64) []int {
				q, err := c.probe(seed)
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
		"red.Config":      events,
		"pie.Config":      events,
		"dualq.Config":    events,
		"fq.CoDelConfig":  func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) },
		"sfq.Config":      func(q aqm.Queue[int]) []int { return flowOrder(q, 120) },
		"fq.CobaltConfig": func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) },
		"fq.PIEConfig":    func(q aqm.Queue[int]) []int { return flowOrder(q, 1000) },
		"cobalt.Config":   events,
		"cake.Config":     func(q aqm.Queue[int]) []int { return flowOrderPairs(q, 1000) },
	}
	for _, c := range queueCases {
		run, ok := probes[c.name]
		if !ok {
			continue
		}
		play := func(seed uint64) []int {
			q, err := c.probe(seed)
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

// TestConfigTypesComplete protects the lists above from falling behind the
// library: every exported struct type named Config or ending in Config in a
// library package (read from the source) is in configTypes, so a new queue
// or front configuration is held to the same shape from the day it lands.
func TestConfigTypesComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, typ := range configTypes {
		listed[typ.String()] = true
	}
	root := filepath.Join("..", "..")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	fset := token.NewFileSet()
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() {
				if name != "testdata" && !strings.HasPrefix(name, ".") {
					if _, err := os.Stat(filepath.Join(dir, name, "go.mod")); err != nil { // another module is not the library
						walk(filepath.Join(dir, name))
					}
				}
				continue
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, sp := range g.Specs {
					ts := sp.(*ast.TypeSpec)
					if _, isStruct := ts.Type.(*ast.StructType); !isStruct || !ts.Name.IsExported() || !strings.HasSuffix(ts.Name.Name, "Config") {
						continue
					}
					found++
					full := f.Name.Name + "." + ts.Name.Name
					if !listed[full] {
						t.Errorf("%s (%s) is not checked here: add it to the registry (package queues: Configs and FromConfig) or, if it configures no queue, to configTypes", full, filepath.Join(dir, name))
					}
				}
			}
		}
	}
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "internal" && !strings.HasPrefix(d.Name(), ".") {
			if _, err := os.Stat(filepath.Join(root, d.Name(), "go.mod")); err == nil {
				continue
			}
			walk(filepath.Join(root, d.Name()))
		}
	}
	if found < len(configTypes) {
		t.Errorf("found %d configuration types in the source, fewer than the %d listed: the walk is broken", found, len(configTypes))
	}
}
