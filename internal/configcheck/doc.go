// Package configcheck holds tests, and only tests, that hold every
// configuration type and queue of aqmkit to the same shape: Validate has a
// value receiver and never changes its receiver, every queue reports its
// effective configuration with Config, and a zero Seed keys hashes and
// random streams from a secret while a fixed Seed reproduces them. Its
// metric tests hold every metric name of the house to one pattern and one
// meaning, and every queue and front to being a metric source.
package configcheck
