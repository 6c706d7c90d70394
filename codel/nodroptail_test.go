package codel_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/refusal"

	"github.com/aqmkit/aqmkit/codel"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// CoDel never signals: fewer than three packets, or fewer bytes than three
// MTUs (1514 bytes by default), leave no more than MTUBytes behind the packet leaving. Each case
// is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	refusal.Check(t, []refusal.Case{
		refusal.Refuses(codel.Config{LimitPackets: 1}, "LimitPackets"),
		refusal.Refuses(codel.Config{LimitPackets: 2}, "LimitPackets"),
		refusal.Accepts(codel.Config{LimitPackets: 3}),
		refusal.Refuses(codel.Config{LimitBytes: 3*1514 - 1}, "LimitBytes"),
		refusal.Accepts(codel.Config{LimitBytes: 3 * 1514}),
		refusal.Refuses(codel.Config{LimitBytes: 1 << 21, Control: codel.Control{MTUBytes: 1 << 20}}, "LimitBytes"),
		refusal.Accepts(codel.Config{LimitBytes: 1500, Control: codel.Control{MTUBytes: 500}}),
	})
}
