package queues

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// A Param is one setting of an algorithm's configuration that [SetParams]
// (and [Options.Params]) can change: a field of its Config type, or of a
// struct embedded in it.
type Param struct {
	// Name is the field's name as spelled in the Config type, with the
	// names of the non-embedded structs that lead to it joined by dots
	// ("Control.Target" in codel.Config is reached as "Target", since
	// Control is embedded).
	Name string
	// Type is the field's Go type, as it prints ("time.Duration",
	// "aqm.Rate", "int", "cake.TinMode").
	Type string
	// Value is the field's value in cfg, in the syntax SetParams reads.
	Value string
}

// Params lists the settings of cfg (one of the Config types [FromConfig]
// takes) that [SetParams] can change, in field order, with their values in
// cfg. Fields of a kind SetParams cannot parse (slices, maps, functions)
// are left out.
func Params(cfg any) []Param {
	v := reflect.ValueOf(cfg)
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return nil
	}
	var ps []Param
	for _, f := range fields(v, "") {
		ps = append(ps, Param{Name: f.name, Type: f.v.Type().String(), Value: format(f.v)})
	}
	return ps
}

// SetParams returns a copy of cfg with the settings in params changed.
// params is a comma-separated list of name=value pairs:
//
//	target=5ms,interval=100ms,disable-flood-guard=true
//
// A name is a field of cfg's type as [Params] lists it, matched without
// regard to case, dashes and underscores; the name of a field inside a
// nested (not embedded) struct may drop the struct's name when it is still
// unique. Values are read as their field's type: durations as
// time.ParseDuration does ("5ms", "1.5s", "500us"), rates in tc's syntax
// ("50mbit"), booleans, integers (decimal, 0x hex), floats, strings, and
// named integer types by the name their String method prints ("diffserv4").
// SetParams checks only the syntax: [FromConfig] validates the values.
//
// The error is a [*aqm.ConfigError]: Field "Params" for a pair without '='
// or a name that matches no field (the rule lists the names there are), the
// field's name for a value that does not parse as its type.
func SetParams(cfg any, params string) (any, error) {
	v := reflect.ValueOf(cfg)
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return nil, &aqm.ConfigError{Pkg: "queues", Field: "Params", Value: cfg, Rule: "need a Config struct to set them on"}
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	fs := fields(c, "")
	for _, pair := range strings.Split(params, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		key, val, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, &aqm.ConfigError{Pkg: "queues", Field: "Params", Value: pair, Rule: "must be name=value"}
		}
		f, err := match(fs, strings.TrimSpace(key), v.Type())
		if err != nil {
			return nil, err
		}
		if err := parse(f.v, strings.TrimSpace(val)); err != nil {
			return nil, &aqm.ConfigError{Pkg: "queues", Field: f.name, Value: val, Rule: err.Error()}
		}
	}
	return c.Interface(), nil
}

type field struct {
	name string
	v    reflect.Value
}

// fields walks the exported fields of the struct v, descending into
// embedded structs under the same prefix and into other struct fields
// (that are not themselves parseable values) under their name.
func fields(v reflect.Value, prefix string) []field {
	var out []field
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fv := v.Field(i)
		switch {
		case parseable(fv):
			out = append(out, field{prefix + sf.Name, fv})
		case fv.Kind() == reflect.Struct && sf.Anonymous:
			out = append(out, fields(fv, prefix)...)
		case fv.Kind() == reflect.Struct:
			out = append(out, fields(fv, prefix+sf.Name+".")...)
		}
	}
	return out
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func parseable(v reflect.Value) bool {
	if reflect.PointerTo(v.Type()).Implements(textUnmarshaler) {
		return true
	}
	switch v.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func norm(s string) string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
}

// match finds the field key names: by its whole dotted name, or else by its
// last part when only one field has it.
func match(fs []field, key string, t reflect.Type) (field, error) {
	k := norm(key)
	var byLeaf []field
	for _, f := range fs {
		if norm(f.name) == k {
			return f, nil
		}
		if i := strings.LastIndexByte(f.name, '.'); i >= 0 && norm(f.name[i+1:]) == k {
			byLeaf = append(byLeaf, f)
		}
	}
	if len(byLeaf) == 1 {
		return byLeaf[0], nil
	}
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	rule := fmt.Sprintf("names no field of %s (fields: %s)", t, strings.Join(names, ", "))
	if len(byLeaf) > 1 {
		rule = fmt.Sprintf("is ambiguous in %s: say which of %s", t, strings.Join(leafNames(byLeaf), ", "))
	}
	return field{}, &aqm.ConfigError{Pkg: "queues", Field: "Params", Value: key, Rule: rule}
}

func leafNames(fs []field) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.name)
	}
	return s
}

var durationType = reflect.TypeFor[time.Duration]()

// parse sets v from s according to v's type.
func parse(v reflect.Value, s string) error {
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := u.UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("must parse as %s: %v", v.Type(), err)
		}
		return nil
	}
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("must be a duration such as 5ms or 1.5s")
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("must be true or false")
		}
		v.SetBool(b)
	case reflect.String:
		v.SetString(s)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("must be a number")
		}
		v.SetFloat(f)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, v.Type().Bits())
		if err != nil {
			if named, ok := byName(v, s); ok {
				v.SetInt(named)
				return nil
			}
			return fmt.Errorf("must be an integer%s", names(v))
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 0, v.Type().Bits())
		if err != nil {
			if named, ok := byName(v, s); ok && named >= 0 {
				v.SetUint(uint64(named))
				return nil
			}
			return fmt.Errorf("must be a non-negative integer%s", names(v))
		}
		v.SetUint(n)
	default:
		return fmt.Errorf("has a type that cannot be set from text")
	}
	return nil
}

// maxNamed is how many values of a named integer type byName tries: the
// modes and enums of the algorithms' configurations are all smaller.
const maxNamed = 64

// enumNames returns the names a named integer type's String method gives
// its first values, skipping values that print as numbers or repeat.
func enumNames(v reflect.Value) map[string]int64 {
	if _, ok := v.Interface().(fmt.Stringer); !ok {
		return nil
	}
	m := map[string]int64{}
	x := reflect.New(v.Type()).Elem()
	for i := range int64(maxNamed) {
		if x.CanInt() {
			x.SetInt(i)
		} else {
			x.SetUint(uint64(i))
		}
		s := x.Interface().(fmt.Stringer).String()
		if _, err := strconv.ParseInt(s, 0, 64); err == nil || strings.Contains(s, "(") {
			continue
		}
		if _, dup := m[norm(s)]; !dup {
			m[norm(s)] = i
		}
	}
	return m
}

func byName(v reflect.Value, s string) (int64, bool) {
	n, ok := enumNames(v)[norm(s)]
	return n, ok
}

func names(v reflect.Value) string {
	m := enumNames(v)
	if len(m) == 0 {
		return ""
	}
	var s []string
	for k := range m {
		s = append(s, k)
	}
	slices.Sort(s)
	return " or one of " + strings.Join(s, ", ")
}

// format prints v in the syntax parse reads.
func format(v reflect.Value) string {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v.Interface())
}
