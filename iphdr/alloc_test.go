package iphdr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// No hot function allocates, on valid packets of every shape or on
// invalid ones (the sentinel errors are preallocated).
func TestZeroAllocs(t *testing.T) {
	pkts := append(seedPackets(), []byte{0x60}, []byte{0x4f, 0, 0, 0})
	h := NewHasherWithKey(5, 6)
	hs := h.WithMode(HashSrcHost)
	hsym := h.WithMode(HashFlowSymmetric)
	fns := map[string]func(p []byte){
		"Flow":           func(p []byte) { sinkFlow, sinkErr = h.Flow(p) },
		"Meta":           func(p []byte) { sinkMeta, sinkErr = h.Meta(p) },
		"Meta/src-host":  func(p []byte) { sinkMeta, sinkErr = hs.Meta(p) },
		"Meta/symmetric": func(p []byte) { sinkMeta, sinkErr = hsym.Meta(p) },
		"Flow/symmetric": func(p []byte) { sinkFlow, sinkErr = hsym.Flow(p) },
		"ECN":            func(p []byte) { e, err := ECN(p); sinkU32, sinkErr = uint32(e), err },
		"DSCP":           func(p []byte) { d, err := DSCP(p); sinkU32, sinkErr = uint32(d), err },
		"SetCE":          func(p []byte) { sinkErr = SetCE(p) },
		"NewHasherWithKey": func(p []byte) {
			sinkMeta, sinkErr = NewHasherWithKey(uint64(len(p)), 1).WithMode(HashDstHost).Meta(p)
		},
	}
	for name, fn := range fns {
		t.Run(name, func(t *testing.T) {
			for i, p := range pkts {
				require.Zero(t, testing.AllocsPerRun(100, func() { fn(p) }), "packet %d", i)
			}
		})
	}
}
