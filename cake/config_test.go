package cake

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/stretchr/testify/require"
)

// TestValidateNamesEveryField protects the rule that one error names every
// bad field, each wrapping aqm.ErrInvalidConfig.
func TestValidateNamesEveryField(t *testing.T) {
	c := Config{
		TinMode: 9, FlowMode: 9, Target: 2 * time.Hour, Interval: 2 * time.Hour,
		Overhead: 300, MPU: -1, Framing: 7, ACKFilter: 5, LimitPackets: -1, MemoryLimitBytes: -5,
	}
	err := c.Validate()
	require.Error(t, err)
	require.True(t, errors.Is(err, aqm.ErrInvalidConfig))
	for _, f := range []string{"TinMode", "FlowMode", "Target", "Interval", "Overhead", "MPU", "Framing",
		"ACKFilter", "LimitPackets", "MemoryLimitBytes"} {
		require.Contains(t, err.Error(), "cake: "+f+" (", "field %s not named", f)
	}
	_, err = New[int](c, nil)
	require.Error(t, err)
	// A relation: Target not below Interval, each valid alone.
	err = Config{Target: 200 * time.Millisecond, Interval: 100 * time.Millisecond}.Validate()
	require.ErrorContains(t, err, "cake: Target (200ms) must be less than Interval (100ms)")
	require.NoError(t, Config{}.Validate())
}

// TestValidateDoesNotMutate protects Validate's value receiver contract.
func TestValidateDoesNotMutate(t *testing.T) {
	c := Config{Rate: 10 * aqm.Mbit, Target: 2 * time.Hour}
	cp := c
	_ = c.Validate()
	require.Equal(t, cp, c)
}

// TestConfigReportsEffective protects Config(): defaults filled in, the
// memory limit derived as Linux does, and the drawn seed reported.
func TestConfigReportsEffective(t *testing.T) {
	q, err := New[int](Config{}, nil)
	require.NoError(t, err)
	c := q.Config()
	require.Equal(t, defaultTarget, c.Target)
	require.Equal(t, defaultInterval, c.Interval)
	require.Equal(t, defaultLimitPackets, c.LimitPackets)
	require.Equal(t, defaultLimitPackets*mtuBytes, c.MemoryLimitBytes) // unshaped: 10240·MTU
	require.NotZero(t, c.Seed)
	// 100 Mbit/s, 100 ms: 4·12.5 MB/s·0.1 s = 5 000 000 bytes.
	q, _ = New[int](Config{Rate: 100 * aqm.Mbit}, nil)
	require.Equal(t, 5_000_000, q.Config().MemoryLimitBytes)
	// 1 Mbit/s: the 4 MiB floor.
	q, _ = New[int](Config{Rate: aqm.Mbit}, nil)
	require.Equal(t, minMemoryBytes, q.Config().MemoryLimitBytes)
	// The rule follows SetRate while the limit is derived.
	q.SetRate(100 * aqm.Mbit)
	require.Equal(t, 5_000_000, q.Config().MemoryLimitBytes)
	// An explicit limit stays.
	q, _ = New[int](Config{Rate: aqm.Mbit, MemoryLimitBytes: 1 << 20}, nil)
	q.SetRate(100 * aqm.Mbit)
	require.Equal(t, 1<<20, q.Config().MemoryLimitBytes)
}

// TestConfigForLink protects the preset: shaped to the rate, limits from
// aqm.Rate's sizing rule, everything else default.
func TestConfigForLink(t *testing.T) {
	c := ConfigForLink(20*aqm.Mbit, 50*time.Millisecond)
	require.Equal(t, 20*aqm.Mbit, c.Rate)
	require.Equal(t, (20 * aqm.Mbit).BufferBytes(50*time.Millisecond), c.MemoryLimitBytes)
	require.Equal(t, (20 * aqm.Mbit).BufferPackets(50*time.Millisecond), c.LimitPackets)
	require.NoError(t, c.Validate())
	c.Rate, c.MemoryLimitBytes, c.LimitPackets = 0, 0, 0
	require.Equal(t, Config{}, c)
}

// TestSeeds protects the seed rule: zero draws a secret key (two default
// queues map flows differently), a fixed seed reproduces the mapping.
func TestSeeds(t *testing.T) {
	slots := func(q *Queue[int]) []uint32 {
		var s []uint32
		for h := range uint32(64) {
			s = append(s, q.mix(h)%queuesPerTin)
		}
		return s
	}
	a, _ := New[int](Config{}, nil)
	b, _ := New[int](Config{}, nil)
	require.NotEqual(t, slots(a), slots(b))
	require.NotEqual(t, a.Config().Seed, b.Config().Seed)
	c, _ := New[int](Config{Seed: 7}, nil)
	d, _ := New[int](Config{Seed: 7}, nil)
	require.Equal(t, slots(c), slots(d))
	require.Equal(t, uint64(7), c.Config().Seed)
	// Reconfigure with Seed 0 keeps the key.
	before := slots(c)
	require.NoError(t, c.Reconfigure(Config{Rate: aqm.Mbit}))
	require.Equal(t, before, slots(c))
	require.Equal(t, uint64(7), c.Config().Seed)
}

// TestReconfigureStructural protects the rule that structural changes
// need an empty queue and name the field otherwise.
func TestReconfigureStructural(t *testing.T) {
	q, _ := New[int](Config{Seed: 1}, nil)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 100}}, 1)
	err := q.Reconfigure(Config{TinMode: DiffServ8})
	require.ErrorContains(t, err, "TinMode")
	require.True(t, errors.Is(err, aqm.ErrInvalidConfig))
	_, ok := q.Dequeue(2)
	require.True(t, ok)
	require.NoError(t, q.Reconfigure(Config{TinMode: DiffServ8, ACKFilter: ACKFilterConservative}))
	require.Len(t, q.tins, 8)
	require.NotNil(t, q.acks)
}

// TestStringers protects the tc keywords of the enums.
func TestStringers(t *testing.T) {
	var sb strings.Builder
	for m := DiffServ3; m <= Precedence+1; m++ {
		sb.WriteString(m.String() + " ")
	}
	for m := TripleIsolate; m <= DualDstHost+1; m++ {
		sb.WriteString(m.String() + " ")
	}
	for f := NoFraming; f <= PTM+1; f++ {
		sb.WriteString(f.String() + " ")
	}
	require.Equal(t, "diffserv3 besteffort diffserv4 diffserv8 precedence tinmode(5) "+
		"triple-isolate flowblind srchost dsthost hosts flows dual-srchost dual-dsthost flowmode(8) "+
		"noatm atm ptm framing(3) ", sb.String())
}

// TestZeroSeedStreamsDiffer protects the random streams: two zero-seed
// queues draw different dithered quanta (each flow's BLUE stream is seeded
// from the same seed), two classifiers with seed 0 hash differently, and
// fixed seeds repeat.
func TestZeroSeedStreamsDiffer(t *testing.T) {
	draws := func(q *Queue[int]) []uint64 { // the stream the quantum dithering draws from
		var d []uint64
		for range 4 {
			d = append(d, q.src.Uint64())
		}
		return d
	}
	a, _ := New[int](Config{}, nil)
	b, _ := New[int](Config{}, nil)
	require.NotEqual(t, draws(a), draws(b))
	c, _ := New[int](Config{Seed: 5}, nil)
	d, _ := New[int](Config{Seed: 5}, nil)
	require.Equal(t, draws(c), draws(d))
	p := ipv4(hA, hB, 17, 0, make([]byte, 8))
	m1, _, _ := NewClassifier(0, false).Classify(p)
	m2, _, _ := NewClassifier(0, false).Classify(p)
	require.NotEqual(t, m1.Hash, m2.Hash)
	m3, _, _ := NewClassifier(9, false).Classify(p)
	m4, _, _ := NewClassifier(9, false).Classify(p)
	require.Equal(t, m3.Hash, m4.Hash)
}

// TestMaxIntervalIsCobalts protects the Interval bound CAKE shares with the
// COBALT controllers it embeds: the longest Interval CAKE accepts, COBALT
// accepts, and one nanosecond more neither does.
func TestMaxIntervalIsCobalts(t *testing.T) {
	require.NoError(t, cobalt.Control{Interval: maxInterval}.Validate())
	require.Error(t, cobalt.Control{Interval: maxInterval + 1}.Validate())
	require.NoError(t, Config{Interval: maxInterval}.Validate())
	require.Error(t, Config{Interval: maxInterval + 1}.Validate())
}
