package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tunDrops returns the router's kernel drop counter for the device name:
// its tx_dropped in /sys/class/net/NAME/statistics, the packets the kernel
// dropped because the device's queue toward the router was full.
func tunDrops(name string) func() (uint64, error) {
	path := filepath.Join("/sys/class/net", name, "statistics", "tx_dropped")
	return func() (uint64, error) { return readCounter(path) }
}

// readCounter reads a decimal counter file such as a sysfs statistic.
func readCounter(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
