package cake_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm/aqmtest"

	"github.com/aqmkit/aqmkit/cake"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// CAKE never signals: it never drops a flow's last packet, so one packet
// of limit, or less than two MTUs of bytes, leaves only the pruner. Each
// case is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	aqmtest.CheckRefusals(t, []aqmtest.Refusal{
		aqmtest.Refuses(cake.Config{LimitPackets: 1}, "LimitPackets"),
		aqmtest.Accepts(cake.Config{LimitPackets: 2}),
		aqmtest.Refuses(cake.Config{MemoryLimitBytes: 2*cake.MTU - 1}, "MemoryLimitBytes"),
		aqmtest.Accepts(cake.Config{MemoryLimitBytes: 2 * cake.MTU}),
	})
}
