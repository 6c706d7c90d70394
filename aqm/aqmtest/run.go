package aqmtest

import "testing"

// Run checks q's factory against the aqm.Queue contract.
func Run(t *testing.T, f Factory) {
	t.Helper()
	t.Skip("aqmtest: kit under construction")
}

// Fuzz installs a fuzz target that decodes bytes into operations and checks
// the contract on them.
func Fuzz(f *testing.F, fac Factory) {
	f.Skip("aqmtest: kit under construction")
}
