package cake

// This file is CAKE's host isolation: the source and destination host
// tables, and the per-host quantum that shares a tin between hosts.

type host struct {
	srcTag, dstTag   uint32
	srcBulk, dstBulk uint16
}

// attachHosts finds or claims the host table entries of f's source and
// destination (8-way search by tag, else an entry without bulk flows,
// else the home entry is shared).
func (q *Queue[T]) attachHosts(b *tin, f *flow, info *Info) {
	f.src, f.dst = 0, 0
	if q.mode&bitSrc != 0 {
		h := q.mix(info.SrcHost ^ 0x5bd1e995)
		f.src = uint16(hostSlot(b.hosts, h, true))
		if f.state == stBulk {
			b.hosts[f.src].srcBulk = min(b.hosts[f.src].srcBulk+1, queuesPerTin)
		}
	}
	if q.mode&bitDst != 0 {
		h := q.mix(info.DstHost ^ 0x5bd1e995)
		f.dst = uint16(hostSlot(b.hosts, h, false))
		if f.state == stBulk {
			b.hosts[f.dst].dstBulk = min(b.hosts[f.dst].dstBulk+1, queuesPerTin)
		}
	}
}

func hostSlot(hs []host, h uint32, src bool) uint32 {
	home := uint32(uint64(h) * hostsPerTin >> 32)
	set := home &^ (ways - 1)
	inner := home & (ways - 1)
	for i := range uint32(ways) {
		k := set + (inner+i)&(ways-1)
		if src && hs[k].srcTag == h || !src && hs[k].dstTag == h {
			return k
		}
	}
	k := set + inner
	for i := range uint32(ways) {
		j := set + (inner+i)&(ways-1)
		if src && hs[j].srcBulk == 0 || !src && hs[j].dstBulk == 0 {
			k = j
			break
		}
	}
	if src {
		hs[k].srcTag = h
	} else {
		hs[k].dstTag = h
	}
	return k
}

// noHost marks a flow queued by plain Enqueue: no host table entry, no
// host fairness.
const noHost = 0xffff

// bulkInc and bulkDec keep the per-host bulk flow counts, clamped to
// [0, 1024].
func (q *Queue[T]) bulkInc(b *tin, f *flow) {
	if b.hosts == nil || f.src == noHost {
		return
	}
	if q.mode&bitSrc != 0 {
		b.hosts[f.src].srcBulk = min(b.hosts[f.src].srcBulk+1, queuesPerTin)
	}
	if q.mode&bitDst != 0 {
		b.hosts[f.dst].dstBulk = min(b.hosts[f.dst].dstBulk+1, queuesPerTin)
	}
}

func (q *Queue[T]) bulkDec(b *tin, f *flow) {
	if b.hosts == nil || f.src == noHost {
		return
	}
	if q.mode&bitSrc != 0 && b.hosts[f.src].srcBulk > 0 {
		b.hosts[f.src].srcBulk--
	}
	if q.mode&bitDst != 0 && b.hosts[f.dst].dstBulk > 0 {
		b.hosts[f.dst].dstBulk--
	}
}

// flowQuantum is f's DRR quantum: the tin's flow quantum divided by the
// bulk flows of its busier host (dual and triple modes), dithered with 16
// random bits so that the mean is exact: (quantum·⌊65535/load⌋ + r) >> 16.
func (q *Queue[T]) flowQuantum(b *tin, f *flow) int32 {
	load := uint32(1)
	if b.hosts != nil && f.src != noHost {
		if q.mode&bitSrc != 0 {
			load = max(load, uint32(b.hosts[f.src].srcBulk))
		}
		if q.mode&bitDst != 0 {
			load = max(load, uint32(b.hosts[f.dst].dstBulk))
		}
	}
	r := uint32(q.src.Uint64() >> 48)
	share := uint32(65535)
	if load > 1 { // a division costs tens of cycles; most flows have load 1
		share = 65535 / load
	}
	return int32((b.quantum*share + r) >> 16)
}
