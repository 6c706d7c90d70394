package aqm

import "errors"

// ErrInvalidConfig is wrapped by every configuration error that a
// constructor in aqmkit returns, one error per bad field, joined with
// errors.Join. Test for it with errors.Is.
var ErrInvalidConfig = errors.New("invalid configuration")

// ConfigError reports one bad configuration field. Its message reads
// "pkg: Field (value) must ...", naming the field as it is spelled in the
// Config struct.
type ConfigError struct {
	Pkg   string // the package prefix, e.g. "codel"
	Field string // the field name as spelled in Config
	Value any    // the offending value
	Rule  string // the constraint it breaks, e.g. "must be positive"
}

// Error implements error.
func (e *ConfigError) Error() string {
	return e.Pkg + ": " + e.Field + " (" + formatValue(e.Value) + ") " + e.Rule
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }
