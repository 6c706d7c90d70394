//go:build race

package aqmtest

const raceEnabled = true
