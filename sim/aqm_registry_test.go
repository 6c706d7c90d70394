package sim

import (
	"testing"

	"github.com/aqmkit/aqmkit/queues"
)

// TestEveryRegistryQueueSimulated protects the simulator's table from
// falling behind the library: every queue of the registry can be chosen
// by its name and builds for a scenario's environment.
func TestEveryRegistryQueueSimulated(t *testing.T) {
	for _, name := range queues.Names() {
		a, err := LookupAQM(name)
		if err != nil {
			t.Errorf("%s is in the registry but not in the simulator: %v", name, err)
			continue
		}
		q, err := a.New(Env{RateBps: 50e6, MSS: DefaultMSS, BufferPackets: 1000, Seed: 1})
		if err != nil || q == nil {
			t.Errorf("%s does not build: %v", name, err)
		}
	}
}
