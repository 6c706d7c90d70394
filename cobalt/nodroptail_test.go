package cobalt_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm/aqmtest"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// COBALT never signals (under two packets, under two full-size packets of
// bytes) and a BLUE increment that rounds to zero on the 2^32 scale. Each
// case is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	aqmtest.CheckRefusals(t, []aqmtest.Refusal{
		aqmtest.Refuses(cobalt.Config{LimitPackets: 1}, "LimitPackets"),
		aqmtest.Accepts(cobalt.Config{LimitPackets: 2}),
		aqmtest.Refuses(cobalt.Config{LimitBytes: 2*aqm.FullPacketBytes - 1}, "LimitBytes"),
		aqmtest.Accepts(cobalt.Config{LimitBytes: 2 * aqm.FullPacketBytes}),
		aqmtest.Refuses(cobalt.Config{Control: cobalt.Control{BlueIncrement: 0x1p-33}}, "BlueIncrement"),
		aqmtest.Accepts(cobalt.Config{Control: cobalt.Control{BlueIncrement: 0x1p-32}}),
	})
}
