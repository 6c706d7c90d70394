// Package seedenv reads the seed of randomised tests from the environment,
// so that one variable, AQMTEST_SEED, replays any of them. The public test
// kit, aqm/aqmtest, reads the same variable with the same rules itself, so
// that it imports nothing under internal/.
package seedenv

import (
	"os"
	"strconv"
	"time"
)

// Seed returns the seed that AQMTEST_SEED names: def when it is unset or not
// a number, a fresh one when it is "random".
func Seed(def int64) int64 {
	switch v := os.Getenv("AQMTEST_SEED"); v {
	case "":
		return def
	case "random":
		return time.Now().UnixNano()
	default:
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return def
		}
		return s
	}
}
