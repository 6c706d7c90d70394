package keyed_test

import (
	"fmt"
	"strings"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/keyed"
)

// Each peer (here the first letter of the payload) gets a FIFO of its own,
// built when its first packet arrives, and the peers take turns by deficit
// round robin: a quantum of 1514 bytes lets peer a send two 1000-byte
// packets before b's turn. With room for two peers, both backlogged, a
// third is refused and counted.
func ExampleQueue() {
	peer := func(p aqm.Packet[string]) byte { return p.Payload[0] }
	k, _ := keyed.New(peer, func(byte) (aqm.Queue[string], error) {
		return fifo.New[string](fifo.Config{LimitPackets: 8}, nil)
	}, keyed.Config{MaxKeys: 2})
	for _, s := range []string{"a1", "a2", "a3", "b1", "c1"} {
		v := k.Enqueue(aqm.Packet[string]{Payload: s, Meta: aqm.Meta{Size: 1000}}, 1)
		fmt.Println(s, v)
	}
	var sent []string
	for {
		p, ok := k.Dequeue(2)
		if !ok {
			break
		}
		sent = append(sent, p.Payload)
	}
	fmt.Println(strings.Join(sent, " "))
	d := k.Detail()
	fmt.Println("keys", d.Keys, "refused", d.RefusedKeyLimit.Packets)
	// Output:
	// a1 enqueued
	// a2 enqueued
	// a3 enqueued
	// b1 enqueued
	// c1 dropped-overlimit
	// a1 a2 b1 a3
	// keys 2 refused 1
}
