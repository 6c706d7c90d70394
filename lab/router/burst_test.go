package router

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
)

// emission is what a direction released at one wake-up.
type emission struct {
	at    time.Duration
	bytes uint64
}

// burstRun drives a direction's front as the router builds it (newQueue's
// queue, frontConfig's bucket) on a manual clock, with a backlog of four
// bulk flows kept at 10 ms of packets of size bytes (segs segments each:
// kept super-packets when segs > 1), and the consumer woken after sleep's
// answer for the wait the front names. It returns every wake-up's release
// over span and the largest packet.
func burstRun(t *testing.T, name string, rate aqm.Rate, size, segs int, sleep func(*rand.Rand, time.Duration) time.Duration, span time.Duration) ([]emission, int) {
	t.Helper()
	q, err := newQueue(name, rate, 100000, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(1)
	f, err := front.New(q, clk, frontConfig(rate, DefaultBurst))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	const step = 10 * time.Microsecond
	backlog := int(uint64(rate) / 100 / 8) // 10 ms, in bytes
	buf := make([]aqm.Packet[[]byte], front.RunBatch)
	var out []emission
	var wake time.Duration
	for now := time.Duration(0); now < span; now += step {
		clk.Set(aqm.Time(1 + now))
		for f.Backlog() < backlog {
			f.Enqueue(aqm.Packet[[]byte]{Meta: aqm.Meta{Size: uint32(size), Segments: uint16(segs), Hash: uint32(1 + rng.IntN(4))}})
		}
		if now < wake {
			continue
		}
		var sent uint64
		var wait time.Duration
		for {
			n, w := f.TryDequeueBatch(buf)
			for _, p := range buf[:n] {
				sent += uint64(p.Size)
			}
			if wait = w; n < len(buf) {
				break
			}
		}
		if sent > 0 {
			out = append(out, emission{now, sent})
		}
		wake = now + step
		if wait > 0 {
			wake = now + sleep(rng, wait)
		}
	}
	return out, size
}

// worstExcess returns the most bytes released in any window [a, b] of
// wake-ups beyond rate × (b − a): the burst the next hop must absorb.
func worstExcess(es []emission, rate aqm.Rate) float64 {
	bytesPerNs := float64(rate) / 8 / 1e9
	worst, lowest := 0.0, 0.0 // lowest: min over a of (bytes before a − rate·a)
	var total float64
	for i, e := range es {
		before := total - bytesPerNs*float64(e.at)
		if i == 0 || before < lowest {
			lowest = before
		}
		total += float64(e.bytes)
		worst = max(worst, total-bytesPerNs*float64(e.at)-lowest)
	}
	return worst
}

// TestBurstBound protects the bursts a direction emits at 1 Gb/s when its
// consumer's timers are late: in any window, at most rate × window plus
// the 5 ms bucket (625 kB) plus one packet, whatever the lateness, with
// wire-size packets and with kept 64 KiB super-packets, behind the
// front's bucket (FQ-CoDel) and behind CAKE's own shaper. The late-wake
// model is latewake_test.go's, on a manual clock.
func TestBurstBound(t *testing.T) {
	const rate = aqm.Gbit
	bucket := float64(frontConfig(rate, DefaultBurst).BurstBytes)
	if bucket != 625000 {
		t.Fatalf("the 5 ms bucket at 1 Gb/s is %v bytes, want 625000", bucket)
	}
	for _, late := range []struct {
		name  string
		sleep func(*rand.Rand, time.Duration) time.Duration
	}{
		{"Go's timers", func(rng *rand.Rand, w time.Duration) time.Duration {
			return goRuntimeSleep(w+time.Millisecond) + time.Duration(rng.ExpFloat64()*float64(100*time.Microsecond))
		}},
		{"5% late by up to 20 ms", uniformLate(0.05, 20*time.Millisecond)},
		{"20% late by up to 50 ms", uniformLate(0.2, 50*time.Millisecond)},
	} {
		for _, aqmName := range []string{"fq-codel", "cake"} {
			for _, pkt := range []struct{ size, segs int }{{1500, 1}, {65535 + 44*40, 45}} {
				es, m := burstRun(t, aqmName, rate, pkt.size, pkt.segs, late.sleep, 2*time.Second)
				excess := worstExcess(es, rate)
				var total uint64
				for _, e := range es {
					total += e.bytes
				}
				share := float64(total) * 8 / float64(rate) / 2
				t.Logf("%-24s %-8s packets of %5d bytes: worst burst %7.0f bytes over the rate (bucket %v), %.3f of the rate", late.name, aqmName, pkt.size, excess, bucket, share)
				if excess > bucket+float64(m) {
					t.Errorf("%s, %s, packets of %d bytes: %0.f bytes above the rate in one window, over the bucket %v + one packet", late.name, aqmName, pkt.size, excess, bucket)
				}
			}
		}
	}
}
