package cake

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// udpLight is a 500-byte UDP packet from a server port 443 to port sport
// of host 192.168.1.dst, with IP ID id.
func udpLight(dst byte, sport uint16, id uint16) []byte {
	l4 := make([]byte, 480)
	binary.BigEndian.PutUint16(l4[0:], 443)
	binary.BigEndian.PutUint16(l4[2:], sport)
	binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	b := ipv4([4]byte{203, 0, 113, 1}, [4]byte{192, 168, 1, dst}, 17, 0, l4)
	binary.BigEndian.PutUint16(b[4:], id)
	return b
}

// runLight offers 100 packets of ten recurring flows to two hosts (ports
// 40000+i%10, hosts alternating), in bursts of 20 spaced gap apart with
// pause after each burst, to a diffserv4 dual-dsthost CAKE at 8 Mbit/s
// with Ethernet framing, dequeuing at every departure its shaper allows;
// it returns the drops and the Detail.
func runLight(t *testing.T, seed uint64, gap, pause time.Duration, off bool) (drops uint64, d Detail) {
	q, err := New(overheadPresets["ethernet"].Apply(Config{Rate: 8 * aqm.Mbit, TinMode: DiffServ4, FlowMode: DualDstHost, LimitPackets: 200, Seed: seed, DisableFloodGuard: off}), func(aqm.Packet[int], aqm.Verdict) { drops++ })
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	i := 0
	arr := now
	got := 0
	for got < 100 {
		for i < 100 && !arr.After(now) {
			m, info, err := q.ClassifyIP(udpLight(byte(10+i%2), uint16(40000+i%10), uint16(i)))
			require.NoError(t, err)
			require.True(t, q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: m}, info, now).Accepted())
			i++
			if i%20 == 0 {
				arr = arr.Add(pause)
			} else {
				arr = arr.Add(gap)
			}
		}
		for {
			if _, ok := q.Dequeue(now); !ok {
				break
			}
			got++
		}
		if q.Len() == 0 && i == 100 {
			break
		}
		next := arr
		if q.Len() > 0 {
			if nd := q.NextDeparture(now); nd > now && (i == 100 || nd < next) {
				next = nd
			}
		}
		if next <= now {
			next = now + 1
		}
		now = next
	}
	return drops, q.Detail()
}

// TestGuardLeavesLightTrafficAlone protects the guard's promise that
// ordinary traffic is served as without it: ten recurring flows to two
// hosts, in bursts of 20, over 400 hash seeds and two burst shapes, are
// never diverted and never dropped, with the guard on and off alike.
func TestGuardLeavesLightTrafficAlone(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		for _, shape := range [][2]time.Duration{{10 * time.Microsecond, 5 * time.Millisecond}, {50 * time.Microsecond, 30 * time.Millisecond}} {
			for _, off := range []bool{false, true} {
				drops, d := runLight(t, seed, shape[0], shape[1], off)
				require.Zero(t, d.GuardDiverted, "seed %d %v guard off %v", seed, shape, off)
				require.Zero(t, d.GuardDropped, "seed %d %v guard off %v", seed, shape, off)
				require.Zero(t, drops, "seed %d %v guard off %v", seed, shape, off)
			}
		}
	}
}
