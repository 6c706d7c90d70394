package router

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
)

// errTableFull is returned by table.lookup for a new prefix once the table
// holds its limit of directions.
var errTableFull = errors.New("router: queue table full")

// prefixOf returns the destination prefix of an IPv4 or IPv6 packet: the
// destination address masked to bits4 (IPv4) or bits6 (IPv6) bits. It
// reports false for anything too short to hold a destination address or of
// another version.
func prefixOf(p []byte, bits4, bits6 int) (netip.Prefix, bool) {
	if len(p) == 0 {
		return netip.Prefix{}, false
	}
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return netip.Prefix{}, false
		}
		pfx, err := netip.AddrFrom4([4]byte(p[16:20])).Prefix(bits4)
		return pfx, err == nil
	case 6:
		if len(p) < 40 {
			return netip.Prefix{}, false
		}
		pfx, err := netip.AddrFrom16([16]byte(p[24:40])).Prefix(bits6)
		return pfx, err == nil
	}
	return netip.Prefix{}, false
}

// table maps destination prefixes to their directions, creating each on first
// use, up to limit. Lookups of known prefixes take no lock and allocate
// nothing: the map is replaced, never modified, when a direction is added.
type table[D any] struct {
	m     atomic.Pointer[map[netip.Prefix]*D]
	mu    sync.Mutex // serialises additions
	list  []*D       // in creation order; guarded by mu
	limit int
	make  func(pfx netip.Prefix, index int) (*D, error)
}

func newTable[D any](limit int, mk func(netip.Prefix, int) (*D, error)) *table[D] {
	t := &table[D]{limit: limit, make: mk}
	m := map[netip.Prefix]*D{}
	t.m.Store(&m)
	return t
}

// lookup returns pfx's direction, creating it if it is new and the table
// has room; errTableFull when it has not, or make's error.
func (t *table[D]) lookup(pfx netip.Prefix) (*D, error) {
	if d := (*t.m.Load())[pfx]; d != nil {
		return d, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.m.Load()
	if d := old[pfx]; d != nil {
		return d, nil
	}
	if len(t.list) >= t.limit {
		return nil, errTableFull
	}
	d, err := t.make(pfx, len(t.list))
	if err != nil {
		return nil, err
	}
	m := make(map[netip.Prefix]*D, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[pfx] = d
	t.m.Store(&m)
	t.list = append(t.list, d)
	return d, nil
}

// all returns the directions in creation order.
func (t *table[D]) all() []*D {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*D(nil), t.list...)
}
