package cobalt_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/refusal"

	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/frame"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// COBALT never signals (under two packets, under two full-size packets of
// bytes) and a BLUE increment that rounds to zero on the 2^32 scale. Each
// case is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	refusal.Check(t, []refusal.Case{
		refusal.Refuses(cobalt.Config{LimitPackets: 1}, "LimitPackets"),
		refusal.Accepts(cobalt.Config{LimitPackets: 2}),
		refusal.Refuses(cobalt.Config{LimitBytes: 2*frame.FullBytes - 1}, "LimitBytes"),
		refusal.Accepts(cobalt.Config{LimitBytes: 2 * frame.FullBytes}),
		refusal.Refuses(cobalt.Config{Control: cobalt.Control{BlueIncrement: 0x1p-33}}, "BlueIncrement"),
		refusal.Accepts(cobalt.Config{Control: cobalt.Control{BlueIncrement: 0x1p-32}}),
	})
}
