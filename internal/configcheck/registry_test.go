package configcheck

import (
	"reflect"

	"github.com/aqmkit/aqmkit/queues"
)

// registryConfigs returns the zero value of every configuration type the
// registry's specs build, once each, in registry order: every algorithm
// package's configuration type that users reach by name.
func registryConfigs() []any {
	var out []any
	seen := map[reflect.Type]bool{}
	for _, s := range queues.List() {
		c, err := s.Config(queues.Options{})
		if err != nil {
			panic(s.Name + ": " + err.Error())
		}
		t := reflect.TypeOf(c)
		if !seen[t] {
			seen[t] = true
			out = append(out, reflect.Zero(t).Interface())
		}
	}
	return out
}
