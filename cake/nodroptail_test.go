package cake_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/refusal"

	"github.com/aqmkit/aqmkit/cake"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// CAKE never signals: it never drops a flow's last packet, so one packet
// of limit, or less than two MTUs of bytes (2×1514), leaves only the pruner. Each
// case is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	refusal.Check(t, []refusal.Case{
		refusal.Refuses(cake.Config{LimitPackets: 1}, "LimitPackets"),
		refusal.Accepts(cake.Config{LimitPackets: 2}),
		refusal.Refuses(cake.Config{MemoryLimitBytes: 2*1514 - 1}, "MemoryLimitBytes"),
		refusal.Accepts(cake.Config{MemoryLimitBytes: 2 * 1514}),
	})
}
