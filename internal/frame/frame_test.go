package frame_test

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/frame"
)

// TestSameAsPresets protects the one full-size packet: aqm's presets turn
// bytes into packets with the size the queues' checks use.
func TestSameAsPresets(t *testing.T) {
	r := aqm.Rate(0) // unlimited: the largest buffer, 32 MiB
	b := r.BufferBytes(time.Second)
	if got, want := r.BufferPackets(time.Second), (b+frame.FullBytes-1)/frame.FullBytes; got != want {
		t.Fatalf("BufferPackets = %d, want %d bytes / %d", got, b, frame.FullBytes)
	}
	if got, want := r.BufferPackets(time.Second), (b+frame.FullBytes)/(frame.FullBytes+1); got == want {
		t.Fatalf("BufferPackets = %d also fits a packet of %d bytes", got, frame.FullBytes+1)
	}
}
