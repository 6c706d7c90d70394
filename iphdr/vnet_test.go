package iphdr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVnetHdrLayout protects the wire layout of the virtio-net header: the
// flags byte, the GSO kind byte, then four little-endian 16-bit fields in
// the order of struct virtio_net_hdr, and a round trip through Put.
func TestVnetHdrLayout(t *testing.T) {
	b := []byte{0x01, 0x81, 0x42, 0x00, 0xa8, 0x05, 0x14, 0x00, 0x10, 0x00}
	h, err := ParseVnetHdr(b)
	require.NoError(t, err)
	require.Equal(t, VnetHdr{Flags: VnetNeedsCsum, GSOType: GSOTCPv4 | GSOECN, HdrLen: 0x42, GSOSize: 1448, CsumStart: 20, CsumOffset: 16}, h)
	require.Equal(t, uint8(GSOTCPv4), h.Kind())
	require.True(t, h.IsGSO())
	out := make([]byte, VnetHdrLen)
	require.NoError(t, h.Put(out))
	require.Equal(t, b, out)
	require.ErrorIs(t, h.Put(out[:9]), ErrTruncated)
	_, err = ParseVnetHdr(b[:9])
	require.ErrorIs(t, err, ErrTruncated)
}

// TestVnetHdrCheck protects the validation: every header a Linux TUN
// produces passes, and each kind of nonsense is refused by name.
func TestVnetHdrCheck(t *testing.T) {
	good := []VnetHdr{
		{},
		{Flags: VnetDataValid},
		{Flags: VnetNeedsCsum, CsumStart: 20, CsumOffset: 16},
		{Flags: VnetNeedsCsum, GSOType: GSOTCPv4, GSOSize: 1448, CsumStart: 20, CsumOffset: 16},
		{Flags: VnetNeedsCsum, GSOType: GSOTCPv6 | GSOECN, GSOSize: 1428, CsumStart: 40, CsumOffset: 16},
		{Flags: VnetNeedsCsum, GSOType: GSOUDPL4, GSOSize: 1200, CsumStart: 40, CsumOffset: 6},
		{GSOType: GSOTCPv4, GSOSize: 1448}, // GRO'd without a partial sum
	}
	for _, h := range good {
		require.NoError(t, h.Check(), "%+v", h)
	}
	bad := []VnetHdr{
		{Flags: 0x08},
		{GSOType: 2},
		{GSOType: 6},
		{GSOType: GSOECN},
		{GSOType: GSOUDPL4 | GSOECN, GSOSize: 1},
		{Flags: VnetNeedsCsum, GSOType: GSOTCPv4, CsumStart: 20, CsumOffset: 16}, // no GSOSize
		{Flags: VnetNeedsCsum, CsumStart: 0xfff0, CsumOffset: 16},
	}
	for _, h := range bad {
		require.ErrorIs(t, h.Check(), ErrVnetHdr, "%+v", h)
	}
}

// FuzzVnetHdr protects parsing against any bytes: no panic, and a header
// that parses cleanly encodes back to the same bytes.
func FuzzVnetHdr(f *testing.F) {
	f.Add([]byte{0x01, 0x01, 0x42, 0x00, 0xa8, 0x05, 0x14, 0x00, 0x10, 0x00})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseVnetHdr(b)
		if err != nil {
			return
		}
		out := make([]byte, VnetHdrLen)
		if err := h.Put(out); err != nil {
			t.Fatal(err)
		}
		if string(out) != string(b[:VnetHdrLen]) {
			t.Fatalf("round trip %x -> %x", b[:VnetHdrLen], out)
		}
	})
}
