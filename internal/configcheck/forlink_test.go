package configcheck

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// forLink is one package's ConfigForLink, with its result boxed and the
// zero configuration of its type.
type forLink struct {
	name string
	fn   func(aqm.Rate, time.Duration) any
	zero any
}

func boxed[C any](fn func(aqm.Rate, time.Duration) C) func(aqm.Rate, time.Duration) any {
	return func(r aqm.Rate, rtt time.Duration) any { return fn(r, rtt) }
}

var forLinks = []forLink{
	{"fifo", boxed(fifo.ConfigForLink), fifo.Config{}},
	{"red", boxed(red.ConfigForLink), red.Config{}},
	{"codel", boxed(codel.ConfigForLink), codel.Config{}},
	{"cobalt", boxed(cobalt.ConfigForLink), cobalt.Config{}},
	{"pie", boxed(pie.ConfigForLink), pie.Config{}},
	{"dualq", boxed(dualq.ConfigForLink), dualq.Config{}},
	{"fq-codel", boxed(fq.CoDelConfigForLink), fq.CoDelConfig{}},
	{"fq-cobalt", boxed(fq.CobaltConfigForLink), fq.CobaltConfig{}},
	{"fq-pie", boxed(fq.PIEConfigForLink), fq.PIEConfig{}},
	{"sfq", boxed(sfq.ConfigForLink), sfq.Config{}},
	{"cake", boxed(cake.ConfigForLink), cake.Config{}},
}

// TestConfigForLinkZeroRate protects one policy across every link preset:
// a zero rate (unknown or unlimited) gives the zero Config, that is the
// algorithm's own defaults, whatever the RTT, rather than the largest
// buffer; and a real rate gives something else, so the check is not
// vacuous.
func TestConfigForLinkZeroRate(t *testing.T) {
	for _, fl := range forLinks {
		t.Run(fl.name, func(t *testing.T) {
			for _, rtt := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond, time.Second} {
				require.Equal(t, fl.zero, fl.fn(0, rtt), "rtt %v", rtt)
			}
			got := fl.fn(8*aqm.Mbit, 20*time.Millisecond)
			require.NotEqual(t, fl.zero, got, "a real rate sizes the preset")
			require.NoError(t, got.(interface{ Validate() error }).Validate())
			require.Equal(t, fmt.Sprintf("%T", fl.zero), fmt.Sprintf("%T", got))
		})
	}
}
