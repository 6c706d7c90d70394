package front

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestGSOPolicySplit protects the split policy: auto splits only shaped
// paths below 1 Gb/s, split and keep ignore the rate.
func TestGSOPolicySplit(t *testing.T) {
	cases := []struct {
		p    GSOPolicy
		rate aqm.Rate
		want bool
	}{
		{GSOAuto, 0, false},
		{GSOAuto, aqm.Kbit, true},
		{GSOAuto, 50 * aqm.Mbit, true},
		{GSOAuto, aqm.Gbit - 1, true},
		{GSOAuto, aqm.Gbit, false},
		{GSOAuto, 10 * aqm.Gbit, false},
		{GSOSplit, 0, true},
		{GSOSplit, 10 * aqm.Gbit, true},
		{GSOKeep, 0, false},
		{GSOKeep, aqm.Mbit, false},
	}
	for _, c := range cases {
		if got := c.p.Split(c.rate); got != c.want {
			t.Errorf("%v.Split(%v) = %v, want %v", c.p, c.rate, got, c.want)
		}
	}
	if GSOAuto.String() != "auto" || GSOSplit.String() != "split" || GSOKeep.String() != "keep" {
		t.Errorf("names %q %q %q", GSOAuto, GSOSplit, GSOKeep)
	}
}
