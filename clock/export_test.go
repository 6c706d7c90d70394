package clock

import "github.com/aqmkit/aqmkit/aqm"

// Func adapts a function to Clock, for the tests.
type Func func() aqm.Time

// Now calls f.
func (f Func) Now() aqm.Time { return f() }
