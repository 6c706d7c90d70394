package tun

import (
	"errors"
	"strings"
	"testing"
)

// TestBadName protects Open's input checks: names the kernel would refuse or
// truncate are refused before any system call, on every system.
func TestBadName(t *testing.T) {
	for _, name := range []string{"0123456789abcdef", "a/b", "a b", "a:b", "a\x00b"} {
		_, err := Open(Config{Name: name})
		if !errors.Is(err, ErrBadName) {
			t.Errorf("Open(%q) = %v, want ErrBadName", name, err)
		}
	}
	_, err := Open(Config{Name: "ok0", MTU: -1})
	if err == nil || !strings.Contains(err.Error(), "MTU") {
		t.Errorf("Open with MTU -1 = %v, want an error naming MTU", err)
	}
}
