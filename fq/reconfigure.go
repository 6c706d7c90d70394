package fq

// reconfigure is the part of Reconfigure the three fair queues share, off
// the hot path. With the flow table and key unchanged (sameTable), the
// scheduler keeps every flow in place, resizes its packet storage if the
// limit or the occupancy asks for it, and apply sets the rest of the
// configuration. Otherwise build makes a new table for need packets, and
// the old table's packets are re-hashed into it flow by flow, keeping
// their order and the queue's Stats.
func (q *sched[T, A]) reconfigure(sameTable bool, limit int, apply func(), build func(need int)) {
	need := max(limit, q.used)
	if sameTable {
		if need+1 > len(q.nodes) || limit+1 < len(q.nodes) {
			q.resize(need)
			q.resetGuard()
		}
		apply()
		return
	}
	old := *q
	build(need)
	q.stats = old.stats
	q.rehash(&old)
	q.resetGuard()
}
