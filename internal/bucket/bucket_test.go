package bucket

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// refBucket is a slow reference token bucket in arbitrary precision, written
// from the definition: credit grows by rate × elapsed seconds (in bits), is
// capped at burst, and a packet may leave when credit ≥ 0, taking 8 × size
// bits. It shares no code with Bucket.
type refBucket struct {
	rate   uint64
	burst  int64 // bytes
	credit *big.Rat
	last   aqm.Time
}

func newRef(rate uint64, burst int64) *refBucket {
	return &refBucket{rate: rate, burst: burst, credit: new(big.Rat).SetInt64(burst * 8)}
}

func (r *refBucket) refill(now aqm.Time) {
	if r.last == 0 || now < r.last { // backward: nothing earned, re-anchored
		r.last = now
		return
	}
	if now == r.last {
		return
	}
	el := new(big.Int).Sub(big.NewInt(int64(now)), big.NewInt(int64(r.last)))
	r.last = now
	capBits := new(big.Rat).SetInt64(r.burst * 8)
	if r.rate == 0 {
		r.credit = capBits
		return
	}
	gain := new(big.Rat).SetFrac(new(big.Int).Mul(el, new(big.Int).SetUint64(r.rate)), big.NewInt(1e9))
	r.credit.Add(r.credit, gain)
	if r.credit.Cmp(capBits) > 0 {
		r.credit = capBits
	}
}

func (r *refBucket) ready() bool { return r.rate == 0 || r.credit.Sign() >= 0 }

// wait is the smallest whole number of nanoseconds after which credit ≥ 0.
func (r *refBucket) wait() time.Duration {
	if r.ready() {
		return 0
	}
	// ns = ceil(-credit × 1e9 / rate)
	x := new(big.Rat).Neg(r.credit)
	x.Mul(x, new(big.Rat).SetInt64(1e9))
	x.Quo(x, new(big.Rat).SetInt(new(big.Int).SetUint64(r.rate)))
	q, m := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return time.Duration(q.Int64())
}

func (r *refBucket) charge(size uint32) {
	if r.rate == 0 {
		return
	}
	r.credit.Sub(r.credit, new(big.Rat).SetInt64(int64(min(size, MaxCostBytes))*8))
}

func (r *refBucket) setRate(now aqm.Time, rate uint64, burst int64) {
	r.refill(now)
	r.rate, r.burst = rate, burst
	capBits := new(big.Rat).SetInt64(burst * 8)
	if r.credit.Cmp(capBits) > 0 || rate == 0 {
		r.credit = capBits
	}
}

// TestBucketMatchesReference protects the fixed-point bucket: on random
// traces with extreme rates, sizes, time jumps (to the int64 limit) and
// backward steps, its credit and wait equal an arbitrary-precision model's
// exactly (tolerance zero: the 1e-9 bit unit makes the arithmetic exact).
func TestBucketMatchesReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	traces := 300
	if testing.Short() {
		traces = 50
	}
	rates := []uint64{1, 7, 1000, 8e6, 1e9, 1e12, math.MaxUint64 / 3, math.MaxUint64}
	bursts := []int64{0, 1, 1500, 3028, 1 << 20, MaxBytes}
	for range traces {
		rate := rates[rng.IntN(len(rates))]
		if rng.IntN(3) == 0 {
			rate = rng.Uint64N(1e10)
		}
		burst := bursts[rng.IntN(len(bursts))]
		var b Bucket
		b.SetRate(0, rate, int(burst))
		b.Credit = b.Capacity
		ref := newRef(rate, burst)
		now := aqm.Time(rng.Int64N(math.MaxInt64/2) - math.MaxInt64/4)
		for step := range 200 {
			switch rng.IntN(10) {
			case 0:
				now += aqm.Time(rng.Int64N(math.MaxInt64/4 + 1)) // huge jump
			case 1:
				now -= aqm.Time(rng.Int64N(1e9)) // backwards
			case 2:
				rate = rates[rng.IntN(len(rates))]
				burst = bursts[rng.IntN(len(bursts))]
				b.SetRate(now, rate, int(burst))
				ref.setRate(now, rate, burst)
			default:
				now += aqm.Time(rng.Int64N(2e6))
			}
			b.Refill(now)
			ref.refill(now)
			if b.Ready() != ref.ready() {
				t.Fatalf("step %d: ready %v, reference %v", step, b.Ready(), ref.ready())
			}
			if got, want := b.Wait(), ref.wait(); got != want {
				t.Fatalf("step %d: wait %v, reference %v (rate %d credit %d)", step, got, want, rate, b.Credit)
			}
			if b.Ready() {
				size := uint32(rng.IntN(3000))
				if rng.IntN(20) == 0 {
					size = math.MaxUint32
				}
				b.Charge(size)
				ref.charge(size)
			}
			want := new(big.Rat).Mul(ref.credit, big.NewRat(1e9, 1)) // bits → units
			if got := new(big.Rat).SetInt64(b.Credit); got.Cmp(want) != 0 {
				t.Fatalf("step %d: credit %v units, reference %v", step, got, want.FloatString(1))
			}
			if b.Credit > b.Capacity {
				t.Fatalf("step %d: credit %d above capacity %d", step, b.Credit, b.Capacity)
			}
		}
	}
}

// FuzzBucket protects the bucket's overflow guards: no input of rate, burst,
// sizes and time steps makes the credit leave its documented range or the
// wait go negative.
func FuzzBucket(f *testing.F) {
	f.Add(uint64(8e6), 3028, int64(1e6), uint32(1500), int64(-5))
	f.Add(uint64(1), MaxBytes, int64(math.MaxInt64), uint32(math.MaxUint32), int64(math.MinInt64))
	f.Add(uint64(math.MaxUint64), 0, int64(1), uint32(0), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, rate uint64, burst int, step int64, size uint32, start int64) {
		if burst < 0 || burst > MaxBytes {
			return
		}
		var b Bucket
		b.SetRate(0, rate, burst)
		now := aqm.Time(start)
		for range 50 {
			now = aqm.Time(int64(now) + step/7) // may wrap: treated as backward time
			b.Refill(now)
			if b.Ready() {
				b.Charge(size)
			}
			if b.Credit > b.Capacity || b.Credit < -int64(MaxCostBytes)*UnitsPerByte {
				t.Fatalf("credit %d outside [%d, %d]", b.Credit, -int64(MaxCostBytes)*UnitsPerByte, b.Capacity)
			}
			if b.Wait() < 0 {
				t.Fatalf("negative wait %v", b.Wait())
			}
		}
	})
}

// TestDefaultBurst protects the default burst's derivation: 5 ms of the rate,
// at least two Ethernet frames, at most MaxBytes.
func TestDefaultBurst(t *testing.T) {
	for _, tc := range []struct {
		rate uint64
		want int
	}{
		{0, DefaultMinBytes},
		{1e6, DefaultMinBytes},     // 1 Mbit/s × 5 ms = 625 B
		{4e6, DefaultMinBytes},     // 4 Mbit/s × 5 ms = 2500 B
		{8e6, 5000},                // 8 Mbit/s × 5 ms = 5 kB
		{100e6, 62500},             // 100 Mbit/s × 5 ms = 62.5 kB
		{10e9, 6_250_000},          // 10 Gbit/s × 5 ms = 6.25 MB
		{math.MaxUint64, MaxBytes}, // capped
		{8 * 200 * MaxBytes, MaxBytes},
	} {
		if got := DefaultBurst(tc.rate); got != tc.want {
			t.Errorf("DefaultBurst(%d) = %d, want %d", tc.rate, got, tc.want)
		}
	}
}
