package red_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/refusal"

	"github.com/aqmkit/aqmkit/red"
)

// TestValidateNoDropTail protects the byte-mode rule that refuses a byte
// limit below two mean-size packets (given, or derived as 2·MaxThreshold),
// which refuses most packets before RED sees a queue. Each case is refused
// naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	refusal.Check(t, []refusal.Case{
		refusal.Refuses(red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 900, LimitBytes: 1999}, "LimitBytes"),
		refusal.Accepts(red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 900, LimitBytes: 2000}),
		refusal.Refuses(red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 999}, "MaxThreshold"),
		refusal.Accepts(red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 1000}),
		refusal.Accepts(red.Config{MinThreshold: 1, MaxThreshold: 3, LimitBytes: 10}), // packet mode: no such rule
	})
}
