package cake

// This file is CAKE's flow lookup: the keyed set-associative table that
// maps a packet's flow hash to a flow queue of its tin.

// mix returns h keyed with the queue's secret: the SplitMix64 finaliser
// over h plus the first key word, then an odd keyed multiply.
func (q *Queue[T]) mix(h uint32) uint32 {
	z := uint64(h) + q.key0
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * q.key1
	return uint32((z ^ z>>31) >> 32)
}

// classify returns the flow queue (global index) for a packet of tin t.
func (q *Queue[T]) classify(t int, hash uint32, info *Info, hosts bool) uint32 {
	base := uint32(t) * queuesPerTin
	m := q.mode
	if m == 0 {
		return base
	}
	var fh uint32
	if m&bitFlows != 0 {
		fh = hash
	} else {
		if m&bitSrc != 0 {
			fh ^= info.SrcHost
		}
		if m&bitDst != 0 {
			fh ^= info.DstHost
		}
	}
	return q.lookup(t, base, fh, info, hosts)
}

// lookup is the 8-way set-associative search of tin t's flow queues for
// flow hash fh (Linux's scheme): the home way if it holds this flow,
// else a way of the set tagged with it, else a free way, else the home
// way is taken over (a collision: the two flows share it).
func (q *Queue[T]) lookup(t int, base, fh uint32, info *Info, hosts bool) uint32 {
	b := &q.tins[t]
	h := q.mix(fh)
	home := uint32(uint64(h) * queuesPerTin >> 32)
	set := home &^ (ways - 1)
	inner := home & (ways - 1)
	if q.tags[base+home] == h && q.flows[base+home].state != stNone {
		b.s.wayDirect++
		return base + home
	}
	alloc := false
	k := inner
	found := false
	for i := range uint32(ways) {
		k = (inner + i) & (ways - 1)
		if q.tags[base+set+k] == h {
			if i > 0 {
				b.s.wayIndirect++
			}
			alloc = q.flows[base+set+k].state == stNone
			found = true
			break
		}
	}
	if !found {
		for i := range uint32(ways) {
			k = (inner + i) & (ways - 1)
			if q.flows[base+set+k].state == stNone {
				alloc, found = true, true
				break
			}
		}
		if q.g.on {
			// A new flow: it claims a free way only if the guard admits
			// it, and never takes a busy one over.
			if s := (base + set) / ways; !q.admitNew(t, s, h, found) {
				return q.divert(t, s, h)
			}
		}
		if found {
			b.s.wayMiss++
		}
	}
	if !found {
		b.s.wayCollision++
		k = inner
		alloc = true
		if f := &q.flows[base+set+k]; f.state == stBulk {
			q.bulkDec(b, f)
		}
	}
	fi := base + set + k
	q.tags[fi] = h
	if alloc && b.hosts != nil {
		if f := &q.flows[fi]; hosts {
			q.attachHosts(b, f, info)
		} else {
			f.src, f.dst = noHost, noHost
		}
	}
	return fi
}
