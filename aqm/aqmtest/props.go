package aqmtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// defaultSeed is the property seed used unless AQMTEST_SEED says otherwise, so
// that CI runs are reproducible.
const defaultSeed = 20261130

// propertySeed returns the seed AQMTEST_SEED names: defaultSeed when it is
// unset or not a number, a clock reading when it is "random". (The
// repository's own gopter properties read the same variable.)
func propertySeed() int64 {
	switch v := os.Getenv("AQMTEST_SEED"); v {
	case "":
		return defaultSeed
	case "random":
		return time.Now().UnixNano()
	default:
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return defaultSeed
		}
		return s
	}
}

func propertyRuns() int {
	if testing.Short() {
		return 40
	}
	return 150
}

// checkProperties runs the conformance checks on random traces: seeded
// random bytes decoded by decode, each played as the fuzz target plays it
// (once op by op, and once as bursts on two queues, burst path against
// loop). A failing trace is shrunk before it is reported: chunks of ops are
// cut out while the trace still fails, so the report is short.
func checkProperties(f Factory, seed int64, runs int) error {
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	for i := range runs {
		data := make([]byte, r.IntN(1201)) // up to 300 ops
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		qseed := r.Uint64()
		if err := fuzzOne(f, data, qseed); err != nil {
			data = shrinkTrace(f, data, qseed)
			return fmt.Errorf("property falsified after %d passed traces\n  trace (%d ops, shrunk): %v\n  queue seed %d\n  error: %v",
				i, len(data)/4, decode(data), qseed, fuzzOne(f, data, qseed))
		}
	}
	return nil
}

// shrinkTrace cuts chunks of whole ops (four bytes each) out of a failing
// trace while it still fails, halving the chunk size down to one op, within
// a bounded number of replays.
func shrinkTrace(f Factory, data []byte, qseed uint64) []byte {
	data = data[:len(data)/4*4]
	budget := 2000
	for chunk := len(data) / 8 * 4; chunk >= 4 && budget > 0; chunk /= 2 {
		chunk = chunk / 4 * 4
		for at := 0; at+chunk <= len(data) && budget > 0; {
			cand := append(append([]byte(nil), data[:at]...), data[at+chunk:]...)
			budget--
			if fuzzOne(f, cand, qseed) != nil {
				data = cand
				continue
			}
			at += chunk
		}
	}
	return data
}

// Fuzz installs a fuzz target on f that decodes each input into a trace,
// plays it on a fresh queue from fac and fails on any contract violation,
// then plays it again as bursts (runs of ops at one instant joined into one
// call of up to 300 packets) on two queues of the same seed, one through
// the burst path and one through loops of single calls, and fails on any
// difference between them, and plays it once more with its arrivals made
// GSO super-packets (as the GSO check does).
// A package's whole fuzz target is:
//
//	func FuzzQueue(f *testing.F) { aqmtest.Fuzz(f, factory) }
func Fuzz(f *testing.F, fac Factory) {
	for s := range uint64(6) {
		ops := randomBytes(s, 64)
		f.Add(ops, s)
	}
	f.Add([]byte{6, 255, 0, 1, 7, 255, 200, 2}, uint64(0))         // burst then drain
	f.Add([]byte{0, 0, 255, 0xe0, 0, 0xff, 0xfc, 0xff}, uint64(1)) // size 0, huge jump, stray ECN
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		if err := fuzzOne(fac, data, seed); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzOne is the body of the fuzz target.
func fuzzOne(fac Factory, data []byte, seed uint64) error {
	ops := decode(data)
	if err := runTraceBudget(fac, seed, ops, randomTraceBudget); err != nil {
		return err
	}
	if err := runBurst(fac, seed, burstSteps(ops, randomTraceBudget)); err != nil {
		return fmt.Errorf("burst path differs from the loop: %w", err)
	}
	if fac.SkipGSO {
		return nil
	}
	if err := runTraceBudget(fac, seed, gsoOps(ops), randomTraceBudget); err != nil {
		return fmt.Errorf("as GSO super-packets: %w", err)
	}
	return nil
}
