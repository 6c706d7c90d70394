package lab

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the lab's agent inside a namespace,
// as aqmlab does, before it runs the tests.
func TestMain(m *testing.M) {
	MaybeAgent()
	os.Exit(m.Run())
}
