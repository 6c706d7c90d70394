package autorate_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// TestSettersWithoutAdapter protects the one SetRate shape: every front and
// cake.Queue is a Setter as it is, and Drive applies the base rate to it.
func TestSettersWithoutAdapter(t *testing.T) {
	clk := clock.NewManual(clock.Epoch)
	q, err := fifo.New[int](fifo.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := front.New[int](q, clk, front.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := front.NewSharded(func(int) (aqm.Queue[int], error) { return fifo.New[int](fifo.Config{}, nil) }, clk, front.ShardedConfig{Shards: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cq, err := cake.New[int](cake.Config{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const base = 40 * aqm.Mbit
	for _, tc := range []struct {
		name string
		set  autorate.Setter
		rate func() aqm.Rate
	}{
		{"front.Front", f, func() aqm.Rate { return f.Config().Rate }},
		{"front.Sharded", s, func() aqm.Rate { return s.Config().Rate }},
		{"cake.Queue", cq, func() aqm.Rate { return cq.Config().Rate }},
	} {
		c, err := autorate.New(autorate.Config{MinRate: 10 * aqm.Mbit, BaseRate: base, MaxRate: 100 * aqm.Mbit})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Drive(tc.set); err != nil {
			t.Fatalf("%s: Drive: %v", tc.name, err)
		}
		if got := tc.rate(); got != base {
			t.Errorf("%s: rate %v after Drive, want %v", tc.name, got, base)
		}
	}
}
