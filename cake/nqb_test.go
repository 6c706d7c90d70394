package cake

import "testing"

// TestNQBTin protects where DSCP 45 (NQB, RFC 9956) lands, as in Linux's
// sch_cake tables: best effort in diffserv3 and diffserv4, the
// best-effort tin 2 in diffserv8, tin 5 in precedence, tin 0 with one tin.
func TestNQBTin(t *testing.T) {
	for _, s := range []struct {
		mode TinMode
		tin  uint8
	}{
		{DiffServ3, 0},
		{DiffServ4, 0},
		{DiffServ8, 2},
		{Precedence, 5},
		{BestEffort, 0},
	} {
		l := layoutFor(s.mode)
		if got := l.dscp[dscpNQB]; got != s.tin {
			t.Errorf("mode %v: DSCP 45 in tin %d, want %d", s.mode, got, s.tin)
		}
		// Its neighbours keep their own tins (VA and EF are Voice where a
		// mode has one), so NQB is not swept into a priority tin.
		if s.mode == DiffServ3 || s.mode == DiffServ4 {
			if l.dscp[dscpVA] == s.tin || l.dscp[dscpEF] == s.tin {
				t.Errorf("mode %v: VA/EF share NQB's tin %d", s.mode, s.tin)
			}
		}
	}
}
