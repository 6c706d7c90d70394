//go:build !linux

package tun

import (
	"os"
	"time"
)

// Device is an open TUN queue. On this system it cannot be opened.
type Device struct{}

// Open returns ErrUnsupported: TUN devices are supported on Linux only.
func Open(cfg Config) (*Device, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

// Name returns the empty string.
func (d *Device) Name() string { return "" }

// MTU returns 0.
func (d *Device) MTU() int { return 0 }

// VnetHdr returns false.
func (d *Device) VnetHdr() bool { return false }

// Offloads returns 0.
func (d *Device) Offloads() uint32 { return 0 }

// OffloadNote returns the empty string.
func (d *Device) OffloadNote() string { return "" }

// Read returns os.ErrClosed.
func (d *Device) Read(b []byte) (int, error) { return 0, os.ErrClosed }

// Write returns os.ErrClosed.
func (d *Device) Write(b []byte) (int, error) { return 0, os.ErrClosed }

// ReadBatch returns os.ErrClosed.
func (d *Device) ReadBatch(bufs [][]byte, sizes []int) (int, error) { return 0, os.ErrClosed }

// WriteBatch returns os.ErrClosed.
func (d *Device) WriteBatch(pkts [][]byte) (int, error) { return 0, os.ErrClosed }

// SetReadDeadline returns os.ErrClosed.
func (d *Device) SetReadDeadline(t time.Time) error { return os.ErrClosed }

// Close does nothing.
func (d *Device) Close() error { return nil }
