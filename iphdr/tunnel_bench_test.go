package iphdr

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
)

// BenchmarkTunnel measures Encapsulate and Decapsulate per packet for each
// inner/outer family pair, on the path that writes (decapsulation turning
// an ECT(0) inner packet CE under a CE outer header; encapsulation copying
// CE into a Not-ECT outer header), with the written bytes restored after
// each call as BenchmarkSetCE does. SetCE on the same inner packet is the
// yardstick.
func BenchmarkTunnel(b *testing.B) {
	for _, fam := range []struct {
		name     string
		ov6, iv6 bool
	}{{"4in4", false, false}, {"6in4", false, true}, {"4in6", true, false}, {"6in6", true, true}} {
		b.Run("Decapsulate/"+fam.name, func(b *testing.B) {
			o, i := tunnelPacket(fam.ov6, fam.iv6, true, false, aqm.CE, aqm.ECT0, 0, 0)
			b1, c10, c11 := i[1], i[10], i[11]
			b.ReportAllocs()
			for b.Loop() {
				_, sinkErr = Decapsulate(o, i)
				i[1], i[10], i[11] = b1, c10, c11
			}
		})
		b.Run("Encapsulate/"+fam.name, func(b *testing.B) {
			o, i := tunnelPacket(fam.ov6, fam.iv6, true, false, aqm.NotECT, aqm.CE, 0, 0)
			b1, c10, c11 := o[1], o[10], o[11]
			b.ReportAllocs()
			for b.Loop() {
				sinkErr = Encapsulate(o, i)
				o[1], o[10], o[11] = b1, c10, c11
			}
		})
		b.Run("SetCE/"+fam.name, func(b *testing.B) {
			_, i := tunnelPacket(fam.ov6, fam.iv6, true, false, aqm.CE, aqm.ECT0, 0, 0)
			b1, c10, c11 := i[1], i[10], i[11]
			b.ReportAllocs()
			for b.Loop() {
				sinkErr = SetCE(i)
				i[1], i[10], i[11] = b1, c10, c11
			}
		})
	}
}
