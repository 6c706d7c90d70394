package aqm

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestPacketFitsRegisters protects the layout that keeps Packet in
// registers: the Go compiler treats a struct as a register value (SSA) only
// if it has at most four fields, each of them such a value too, and it is at
// most four words long. A fifth top-level field would silently send every
// Packet through memory again (see the Packet doc).
func TestPacketFitsRegisters(t *testing.T) {
	if n := reflect.TypeFor[Packet[uint64]]().NumField(); n > 4 {
		t.Errorf("Packet has %d fields, want at most 4", n)
	}
	if n := reflect.TypeFor[Meta]().NumField(); n > 4 {
		t.Errorf("Meta has %d fields, want at most 4", n)
	}
	if s := unsafe.Sizeof(Packet[uint64]{}); s > 4*unsafe.Sizeof(uintptr(0)) {
		t.Errorf("Packet[uint64] is %d bytes, want at most 4 words", s)
	}
	if s := unsafe.Sizeof(Packet[*int]{}); s > 4*unsafe.Sizeof(uintptr(0)) {
		t.Errorf("Packet[*int] is %d bytes, want at most 4 words", s)
	}
}

// TestMetaPromoted protects the documented way of reading and setting the
// grouped fields: as fields of the packet itself.
func TestMetaPromoted(t *testing.T) {
	p := Packet[int]{Payload: 7, Meta: Meta{Size: 1500, Hash: 42, ECN: ECT1}}
	if p.Size != 1500 || p.Hash != 42 || p.ECN != ECT1 {
		t.Fatalf("promoted fields read %d %d %v", p.Size, p.Hash, p.ECN)
	}
	p.ECN = CE
	if p.Meta.ECN != CE {
		t.Fatalf("setting p.ECN did not set p.Meta.ECN")
	}
}

// TestSegmentCount protects the meaning of a zero Segments: one packet, so
// that callers that never set it are counted as before.
func TestSegmentCount(t *testing.T) {
	for _, c := range []struct {
		seg  uint16
		want int
	}{{0, 1}, {1, 1}, {44, 44}, {65535, 65535}} {
		if got := (Meta{Segments: c.seg}).SegmentCount(); got != c.want {
			t.Errorf("Segments %d: SegmentCount %d, want %d", c.seg, got, c.want)
		}
	}
}
