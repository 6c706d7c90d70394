// Package metrics turns a Detail struct into [aqm.Metric]s from tags beside
// its fields, so that every metric name of the library is declared once,
// next to the value it names, and listed by one emitter.
//
// # Tags
//
// Each exported field of a declared struct carries a `metric` tag, or is an
// embedded struct without one, whose fields are listed in its place:
//
//	MemoryBytes int            `metric:"memory_bytes,gauge"`
//	Evicted     uint64         `metric:"evicted_overlimit_packets,counter"`
//	Refused     aqm.Count      `metric:"refused,counter"`         // refused_packets, refused_bytes
//	Delay       time.Duration  `metric:"delay_seconds,gauge"`     // in seconds
//	Avg         float64        `metric:"average_queue,gauge,unit=ByteMode"`
//	Pool        PoolStats      `metric:"pool"`                    // pool_ + Pool's own tags
//	Tins        [8]TinDetail   `metric:"tin,each=NumTins"`        // tin0_…, tin1_…, for k < NumTins
//	Name        string         `metric:"-"`                       // not a metric
//
// The first word is the name, the second the kind (counter or gauge).
// Booleans give 0 or 1. A [time.Duration] or an [aqm.Time] gives seconds (an
// instant in the caller's clock, 0 when unset) and its name must end in
// _seconds; an [aqm.Rate] gives bits per second and its name must end in
// _bits_per_second. An [aqm.Count] gives two metrics, the name followed by
// _packets and by _bytes. unit=F names a bool field F: the name gets _bytes
// when F is true and _packets otherwise. A struct field with a name and no
// kind lists its fields with the name and "_" before theirs; an array of
// structs with each=F lists its first F elements (F an int field), the
// name, the index and "_" before theirs.
//
// # Cost
//
// [Declare] reads the tags once, when a package initialises, and panics on a
// bad tag: a programming error that every test of the package then reports.
// [Set.Of] allocates what the closure it returns takes (one allocation for a
// struct of up to 128 bytes); listing the metrics allocates nothing more.
package metrics

import (
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
)

// Desc describes one metric a [Set] can list.
type Desc struct {
	// Name is the metric's full name, prefixes included ("tin0_dropped_packets").
	Name string
	// Leaf is the name as its tag declares it, with the unit suffix an
	// aqm.Count or a unit switch adds, but without the prefixes of the
	// structs around it ("dropped_packets").
	Leaf string
	// Kind is the metric's kind.
	Kind aqm.MetricKind
	// Field is the Go field the value comes from, the last element of its
	// path ("Drops"; "Packets" and "Bytes" for the halves of an aqm.Count
	// are reported as the Count field's own name).
	Field string
	// Path is the field's full path in the declared struct ("Tins[0].Drops").
	Path string
	// Type is the field's Go type.
	Type reflect.Type
	// Owner is the struct type the field is declared in.
	Owner reflect.Type
}

// Set is the metrics of the struct type D, read from its tags.
type Set[D any] struct {
	fields []field
	descs  []Desc
}

// field is one metric, flattened: where its value is and how to read it.
type field struct {
	name  string
	alt   string // the name when the unit switch is set
	kind  aqm.MetricKind
	conv  conv
	off   uintptr
	swOff uintptr // the unit switch (a bool), when alt is set
	// guardOff is the offset of the int that limits an array's elements,
	// and index this element's index, when guarded.
	guarded  bool
	guardOff uintptr
	index    int
}

type conv uint8

const (
	cBool conv = iota
	cInt
	cInt8
	cInt16
	cInt32
	cInt64
	cUint
	cUint8
	cUint16
	cUint32
	cUint64
	cFloat32
	cFloat64
	cDuration // an int64 of nanoseconds, given in seconds
)

var (
	typDuration = reflect.TypeFor[time.Duration]()
	typTime     = reflect.TypeFor[aqm.Time]()
	typRate     = reflect.TypeFor[aqm.Rate]()
	typCount    = reflect.TypeFor[aqm.Count]()
)

// declared holds every declared Set's descriptions, by type, for [Lookup].
var declared sync.Map // reflect.Type -> []Desc

// Declare reads D's tags and returns the Set that lists D's metrics, every
// name preceded by prefix (which may be empty). It panics if a tag is
// malformed, a field lacks one, a unit does not fit its type or a name
// repeats. Call it once per type, in a package-level variable.
func Declare[D any](prefix string) *Set[D] {
	t := reflect.TypeFor[D]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("metrics: %v is not a struct", t))
	}
	s := &Set[D]{}
	b := builder{root: t, seen: map[string]string{}}
	b.walk(t, 0, prefix, "", nil)
	s.fields, s.descs = b.fields, b.descs
	declared.Store(t, s.descs)
	emitters.Store(t, func(v any) iter.Seq[aqm.Metric] { return s.Of(v.(D)) })
	return s
}

// emitters holds, by type, a function that lists a value's metrics, for
// [Of].
var emitters sync.Map // reflect.Type -> func(any) iter.Seq[aqm.Metric]

// Of returns the metrics of v, whose type must have a declared Set, and
// whether it has one: what that Set's Of gives, for a caller that holds v
// as an interface value (the tests that walk every Detail type).
func Of(v any) (iter.Seq[aqm.Metric], bool) {
	f, ok := emitters.Load(reflect.TypeOf(v))
	if !ok {
		return nil, false
	}
	return f.(func(any) iter.Seq[aqm.Metric])(v), true
}

// Lookup returns the descriptions of the metrics of the struct type t, if a
// Set was declared for it.
func Lookup(t reflect.Type) ([]Desc, bool) {
	v, ok := declared.Load(t)
	if !ok {
		return nil, false
	}
	return append([]Desc(nil), v.([]Desc)...), true
}

// Descs returns the descriptions of every metric s can list, in order
// (all the elements of an array, whatever its count field says).
func (s *Set[D]) Descs() []Desc { return append([]Desc(nil), s.descs...) }

// Of returns the metrics of d, in the order of its fields.
func (s *Set[D]) Of(d D) iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		c := d
		s.Emit(&c, yield)
	}
}

// Queue returns the metrics of a queue: st's, then those of its Detail d.
func (s *Set[D]) Queue(st aqm.Stats, d D) iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		for m := range st.Metrics() {
			if !yield(m) {
				return
			}
		}
		c := d
		s.Emit(&c, yield)
	}
}

// Emit yields the metrics of *d and reports whether yield asked for all of
// them.
func (s *Set[D]) Emit(d *D, yield func(aqm.Metric) bool) bool {
	base := unsafe.Pointer(d)
	for i := range s.fields {
		f := &s.fields[i]
		if f.guarded && *(*int)(unsafe.Add(base, f.guardOff)) <= f.index {
			continue
		}
		name := f.name
		if f.alt != "" && *(*bool)(unsafe.Add(base, f.swOff)) {
			name = f.alt
		}
		if !yield(aqm.Metric{Name: name, Kind: f.kind, Value: read(unsafe.Add(base, f.off), f.conv)}) {
			return false
		}
	}
	return true
}

func read(p unsafe.Pointer, c conv) float64 {
	switch c {
	case cBool:
		if *(*bool)(p) {
			return 1
		}
		return 0
	case cInt:
		return float64(*(*int)(p))
	case cInt8:
		return float64(*(*int8)(p))
	case cInt16:
		return float64(*(*int16)(p))
	case cInt32:
		return float64(*(*int32)(p))
	case cInt64:
		return float64(*(*int64)(p))
	case cUint:
		return float64(*(*uint)(p))
	case cUint8:
		return float64(*(*uint8)(p))
	case cUint16:
		return float64(*(*uint16)(p))
	case cUint32:
		return float64(*(*uint32)(p))
	case cUint64:
		return float64(*(*uint64)(p))
	case cFloat32:
		return float64(*(*float32)(p))
	case cFloat64:
		return *(*float64)(p)
	default: // cDuration
		return time.Duration(*(*int64)(p)).Seconds()
	}
}

var convs = map[reflect.Kind]conv{
	reflect.Bool: cBool, reflect.Int: cInt, reflect.Int8: cInt8, reflect.Int16: cInt16,
	reflect.Int32: cInt32, reflect.Int64: cInt64, reflect.Uint: cUint, reflect.Uint8: cUint8,
	reflect.Uint16: cUint16, reflect.Uint32: cUint32, reflect.Uint64: cUint64,
	reflect.Float32: cFloat32, reflect.Float64: cFloat64,
}

// guard is the element limit of the array being walked, if any.
type guard struct {
	off   uintptr
	index int
}

type builder struct {
	root   reflect.Type
	fields []field
	descs  []Desc
	seen   map[string]string // name -> path
}

func (b *builder) fail(path, format string, args ...any) {
	panic(fmt.Sprintf("metrics: %v.%s: %s", b.root, path, fmt.Sprintf(format, args...)))
}

// walk lists the fields of the struct t found at offset base of the root,
// names preceded by prefix, paths by path.
func (b *builder) walk(t reflect.Type, base uintptr, prefix, path string, g *guard) {
	for i := range t.NumField() {
		sf := t.Field(i)
		p := path + sf.Name
		tag, tagged := sf.Tag.Lookup("metric")
		if !tagged && sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			b.walk(sf.Type, base+sf.Offset, prefix, p+".", g)
			continue
		}
		if !sf.IsExported() {
			if tagged {
				b.fail(p, "an unexported field cannot be a metric")
			}
			continue
		}
		if !tagged {
			b.fail(p, "no metric tag (name it, or write `metric:\"-\"`)")
		}
		if tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		if name == "" {
			b.fail(p, "empty metric name")
		}
		if len(parts) == 1 || strings.HasPrefix(parts[1], "each=") {
			b.nested(t, sf, base, prefix+name, p, parts[1:], g)
			continue
		}
		var kind aqm.MetricKind
		switch parts[1] {
		case "counter":
			kind = aqm.Counter
		case "gauge":
			kind = aqm.Gauge
		default:
			b.fail(p, "kind %q is neither counter nor gauge", parts[1])
		}
		var sw *reflect.StructField
		for _, o := range parts[2:] {
			f, ok := strings.CutPrefix(o, "unit=")
			if !ok {
				b.fail(p, "unknown option %q", o)
			}
			s, ok := t.FieldByName(f)
			if !ok || s.Type.Kind() != reflect.Bool {
				b.fail(p, "unit=%s does not name a bool field beside it", f)
			}
			sw = &s
		}
		b.leaf(t, sf, base, prefix, name, p, kind, sw, g)
	}
}

// nested lists a struct field (prefix name_) or an array of structs
// (prefix nameK_ for element K).
func (b *builder) nested(owner reflect.Type, sf reflect.StructField, base uintptr, name, path string, opts []string, g *guard) {
	if len(opts) == 0 {
		if sf.Type.Kind() != reflect.Struct {
			b.fail(path, "no kind given for a %v", sf.Type)
		}
		b.walk(sf.Type, base+sf.Offset, name+"_", path+".", g)
		return
	}
	if len(opts) != 1 || sf.Type.Kind() != reflect.Array || sf.Type.Elem().Kind() != reflect.Struct {
		b.fail(path, "each= needs an array of structs and no other option")
	}
	if g != nil {
		b.fail(path, "arrays within arrays are not supported")
	}
	cf, ok := owner.FieldByName(strings.TrimPrefix(opts[0], "each="))
	if !ok || cf.Type.Kind() != reflect.Int {
		b.fail(path, "%s does not name an int field beside it", opts[0])
	}
	et := sf.Type.Elem()
	for k := range sf.Type.Len() {
		b.walk(et, base+sf.Offset+uintptr(k)*et.Size(), name+strconv.Itoa(k)+"_",
			path+"["+strconv.Itoa(k)+"].", &guard{off: base + cf.Offset, index: k})
	}
}

// leaf lists one value field.
func (b *builder) leaf(owner reflect.Type, sf reflect.StructField, base uintptr, prefix, name, path string, kind aqm.MetricKind, sw *reflect.StructField, g *guard) {
	t := sf.Type
	switch {
	case t == typCount:
		if sw != nil {
			b.fail(path, "unit= does not apply to an aqm.Count")
		}
		pk, _ := t.FieldByName("Packets")
		by, _ := t.FieldByName("Bytes")
		b.add(owner, sf, path, prefix, name+"_packets", "", kind, cUint64, base+sf.Offset+pk.Offset, 0, g)
		b.add(owner, sf, path, prefix, name+"_bytes", "", kind, cUint64, base+sf.Offset+by.Offset, 0, g)
		return
	case t == typDuration || t == typTime:
		if !strings.HasSuffix(name, "_seconds") {
			b.fail(path, "a %v is given in seconds: end the name in _seconds", t)
		}
		b.add(owner, sf, path, prefix, name, "", kind, cDuration, base+sf.Offset, 0, g)
		return
	case t == typRate:
		if !strings.HasSuffix(name, "_bits_per_second") {
			b.fail(path, "an aqm.Rate is in bits per second: end the name in _bits_per_second")
		}
	}
	c, ok := convs[t.Kind()]
	if !ok {
		b.fail(path, "a %v cannot be a metric", t)
	}
	if sw != nil {
		if c == cBool {
			b.fail(path, "unit= does not apply to a bool")
		}
		b.add(owner, sf, path, prefix, name+"_packets", name+"_bytes", kind, c, base+sf.Offset, base+sw.Offset, g)
		return
	}
	b.add(owner, sf, path, prefix, name, "", kind, c, base+sf.Offset, 0, g)
}

// add records one value field, read at off, and its descriptions.
func (b *builder) add(owner reflect.Type, sf reflect.StructField, path, prefix, name, alt string, kind aqm.MetricKind, c conv, off, swOff uintptr, g *guard) {
	f := field{name: prefix + name, kind: kind, conv: c, off: off}
	if alt != "" {
		f.alt, f.swOff = prefix+alt, swOff
	}
	if g != nil {
		f.guarded, f.guardOff, f.index = true, g.off, g.index
	}
	b.fields = append(b.fields, f)
	b.describe(owner, sf, path, prefix, name, kind)
	if alt != "" {
		b.describe(owner, sf, path, prefix, alt, kind)
	}
}

// describe records the metric prefix+leaf, refusing a name already taken.
func (b *builder) describe(owner reflect.Type, sf reflect.StructField, path, prefix, leaf string, kind aqm.MetricKind) {
	n := prefix + leaf
	if other, dup := b.seen[n]; dup {
		b.fail(path, "metric %q is also %s", n, other)
	}
	b.seen[n] = path
	b.descs = append(b.descs, Desc{Name: n, Leaf: leaf, Kind: kind, Field: sf.Name, Path: path, Type: sf.Type, Owner: owner})
}
