package aqmtest

import (
	"fmt"
	"testing"

	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// defaultSeed is the gopter seed used unless AQMTEST_SEED says otherwise, so
// that CI runs are reproducible.
const defaultSeed = 20261130

func propertySeed() int64 { return proptest.Seed(defaultSeed) }

func propertyRuns() int {
	if testing.Short() {
		return 40
	}
	return 150
}

// checkProperties runs the conformance checks on gopter-generated traces:
// random bytes decoded by Decode, so failures shrink to short traces. Each
// trace is played as the fuzz target plays it: once op by op, and once as
// bursts on two queues (burst path against loop).
func checkProperties(f Factory, seed int64, runs int) error {
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests = runs
	params.MaxSize = 1200 // bytes: up to 300 ops
	p := prop.ForAll(func(data []byte, qseed uint64) string {
		if err := fuzzOne(f, data, qseed); err != nil {
			return err.Error()
		}
		return ""
	}, gen.SliceOf(gen.UInt8()), gen.UInt64())
	res := p.Check(params)
	if res.Passed() {
		return nil
	}
	msg := fmt.Sprintf("property falsified after %d passed traces", res.Succeeded)
	for _, a := range res.Args {
		if b, ok := a.Arg.([]byte); ok {
			msg += fmt.Sprintf("\n  trace (%d ops, shrunk): %v", len(b)/4, Decode(b))
		} else {
			msg += fmt.Sprintf("\n  %s = %v", a.Label, a.Arg)
		}
	}
	if res.Error != nil {
		msg += "\n  error: " + res.Error.Error()
	}
	for _, l := range res.Labels {
		msg += "\n  " + l
	}
	return fmt.Errorf("%s", msg)
}

// Fuzz installs a fuzz target on f that decodes each input with [Decode],
// plays it on a fresh queue from fac and fails on any contract violation,
// then plays it again as bursts (runs of ops at one instant joined into one
// call of up to 300 packets) on two queues of the same seed, one through
// the burst path and one through loops of single calls, and fails on any
// difference between them.
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
	ops := Decode(data)
	if err := runTraceBudget(fac, seed, ops, randomTraceBudget); err != nil {
		return err
	}
	if err := runBurst(fac, seed, burstSteps(ops, randomTraceBudget)); err != nil {
		return fmt.Errorf("burst path differs from the loop: %w", err)
	}
	return nil
}
