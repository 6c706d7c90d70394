package cake

// DSCP code points named in the tin maps.
const (
	dscpLE   = 1 // lower effort (RFC 8622)
	dscpTOS2 = 2 // old TOS "min cost"
	dscpTOS4 = 4 // old TOS "max reliability"
	dscpCS1  = 8
	dscpCS2  = 16
	dscpCS3  = 24
	dscpCS4  = 32
	dscpCS5  = 40
	dscpCS6  = 48
	dscpCS7  = 56
	dscpEF   = 46
	dscpVA   = 44 // VOICE-ADMIT (RFC 5865)
	dscpNQB  = 45 // Non-Queue-Building (RFC 9956): no entry of its own; Linux's tables leave it best effort
)

var (
	af1x = []uint8{10, 12, 14}
	af2x = []uint8{18, 20, 22}
	af3x = []uint8{26, 28, 30}
	af4x = []uint8{34, 36, 38}
)

// tinLayout is what a TinMode means: how many tins, the DSCP map, each
// tin's threshold as a fraction of the rate (num/den after the shift
// rule of the mode), and each tin's weight for unshaped operation.
type tinLayout struct {
	n      int
	dscp   [64]uint8
	weight [8]int32
}

// layoutFor builds the tin layout of m.
func layoutFor(m TinMode) tinLayout {
	var l tinLayout
	set := func(tin uint8, cps ...uint8) {
		for _, c := range cps {
			l.dscp[c] = tin
		}
	}
	fill := func(tin uint8) {
		for i := range l.dscp {
			l.dscp[i] = tin
		}
	}
	switch m {
	case BestEffort:
		l.n = 1
		l.weight[0] = 65535
	case DiffServ4:
		l.n = 4
		fill(0)
		set(1, dscpCS1, dscpLE)
		set(2, dscpCS2, dscpCS3, dscpTOS4)
		set(2, af2x...)
		set(2, af3x...)
		set(2, af4x...)
		set(3, dscpCS4, dscpCS5, dscpVA, dscpEF, dscpCS6, dscpCS7)
		l.weight = [8]int32{1024, 64, 512, 256}
	case DiffServ8, Precedence:
		l.n = 8
		if m == Precedence {
			for i := range l.dscp {
				l.dscp[i] = uint8(i >> 3)
			}
		} else {
			fill(2)
			set(0, dscpLE)
			set(1, dscpCS1, dscpTOS2)
			set(1, af1x...)
			set(3, dscpCS3)
			set(3, af3x...)
			set(3, af4x...)
			set(4, dscpTOS4)
			set(4, af2x...)
			set(5, dscpCS2)
			set(6, dscpCS4, dscpCS5, dscpVA, dscpEF)
			set(7, dscpCS6, dscpCS7)
		}
		w := int32(256)
		for i := range 8 {
			l.weight[i] = w
			w = w * 7 >> 3
		}
	default: // DiffServ3
		l.n = 3
		fill(0)
		set(1, dscpCS1, dscpLE)
		set(2, dscpCS7, dscpCS6, dscpEF, dscpVA, dscpTOS4)
		l.weight = [8]int32{1024, 64, 256}
	}
	return l
}

// tinRate returns the threshold rate of tin i of mode m, in bytes per
// second, for a total of rate bytes per second (0: unshaped).
func tinRate(m TinMode, i int, rate uint64) uint64 {
	switch m {
	case DiffServ3:
		return rate >> [3]uint{0, 4, 2}[i]
	case DiffServ4:
		return rate >> [4]uint{0, 4, 1, 2}[i]
	case DiffServ8, Precedence:
		for range i {
			rate = rate * 7 >> 3
		}
		return rate
	}
	return rate
}

// displayOrder returns the tin index shown at position k of tc's
// statistics (diffserv3 and diffserv4 show Bulk first).
func displayOrder(m TinMode, k int) int {
	if (m == DiffServ3 || m == DiffServ4) && k < 2 {
		return 1 - k
	}
	return k
}
