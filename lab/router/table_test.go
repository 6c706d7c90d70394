package router

import (
	"errors"
	"net/netip"
	"testing"
)

// TestPrefixOf protects the grouping of destinations: IPv4 by /24 and IPv6
// by /64 (or the lengths given), on the destination address only, and
// nothing for packets of other versions or too short to hold a destination.
func TestPrefixOf(t *testing.T) {
	cases := []struct {
		pkt  []byte
		b4   int
		b6   int
		want string
	}{
		{ipv4("10.201.2.2", "10.201.1.2", 0, 60, 0), 24, 64, "10.201.1.0/24"},
		{ipv4("10.201.2.2", "10.201.1.200", 0, 60, 0), 24, 64, "10.201.1.0/24"},
		{ipv4("10.201.1.2", "10.201.2.2", 0, 60, 0), 24, 64, "10.201.2.0/24"},
		{ipv4("10.201.1.2", "10.201.2.2", 0, 60, 0), 16, 64, "10.201.0.0/16"},
		{ipv4("10.201.1.2", "10.201.2.129", 0, 60, 0), 25, 64, "10.201.2.128/25"},
		{ipv6("fd00::1", "2001:db8:1:2::1", 60), 24, 64, "2001:db8:1:2::/64"},
		{ipv6("fd00::1", "2001:db8:1:2:ffff::1", 60), 24, 64, "2001:db8:1:2::/64"},
		{ipv6("fd00::1", "2001:db8:1:3::1", 60), 24, 64, "2001:db8:1:3::/64"},
		{ipv6("fd00::1", "2001:db8:1:3::1", 60), 24, 48, "2001:db8:1::/48"},
	}
	for _, c := range cases {
		got, ok := prefixOf(c.pkt, c.b4, c.b6)
		if !ok || got != netip.MustParsePrefix(c.want) {
			t.Errorf("prefixOf(dst %v, /%d, /%d) = %v, %v; want %s", c.pkt[16:20], c.b4, c.b6, got, ok, c.want)
		}
	}
	bad := [][]byte{nil, {0x45}, ipv4("1.2.3.4", "5.6.7.8", 0, 60, 0)[:19], ipv6("::1", "::2", 60)[:39], {0x55, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}}
	for _, p := range bad {
		if got, ok := prefixOf(p, 24, 64); ok {
			t.Errorf("prefixOf(%x) = %v, want no prefix", p, got)
		}
	}
}

// TestTableBound protects the table's bound and reuse: each prefix gets one
// direction made on first use, a prefix past the limit is refused while the
// known ones keep working, a failing constructor adds nothing, and a lookup
// of a known prefix allocates nothing.
func TestTableBound(t *testing.T) {
	type dir struct {
		pfx   netip.Prefix
		index int
	}
	made := 0
	fail := netip.MustParsePrefix("10.9.9.0/24")
	tb := newTable(3, func(p netip.Prefix, i int) (*dir, error) {
		if p == fail {
			return nil, errors.New("no")
		}
		made++
		return &dir{p, i}, nil
	})
	ps := []netip.Prefix{
		netip.MustParsePrefix("10.201.1.0/24"),
		netip.MustParsePrefix("2001:db8:1:2::/64"),
		netip.MustParsePrefix("10.201.2.0/24"),
	}
	var ds []*dir
	for i, p := range ps {
		d, err := tb.lookup(p)
		if err != nil || d.pfx != p || d.index != i {
			t.Fatalf("lookup(%v) = %+v, %v", p, d, err)
		}
		ds = append(ds, d)
	}
	if _, err := tb.lookup(fail); err == nil {
		t.Error("lookup with a failing constructor succeeded")
	}
	if _, err := tb.lookup(netip.MustParsePrefix("10.201.3.0/24")); !errors.Is(err, errTableFull) {
		t.Errorf("fourth prefix: %v, want errTableFull", err)
	}
	for i, p := range ps {
		if d, err := tb.lookup(p); err != nil || d != ds[i] {
			t.Errorf("second lookup(%v) = %p, %v; want the first direction %p", p, d, err, ds[i])
		}
	}
	if made != 3 || len(tb.all()) != 3 {
		t.Errorf("made %d, listed %d; want 3", made, len(tb.all()))
	}
	allocs := testing.AllocsPerRun(100, func() { tb.lookup(ps[1]) })
	if allocs != 0 {
		t.Errorf("lookup of a known prefix: %v allocations, want 0", allocs)
	}
}
