package sfq_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/sfq"
)

// A bulk flow fills a 4-packet SFQ; a small packet of another flow still
// gets in (the longest flow, bulk, loses its newest packet) and is sent
// after the bulk flow's first quantum, not after its whole backlog.
func ExampleNew() {
	q, err := sfq.New(sfq.Config{LimitPackets: 4, QuantumBytes: 1500, Seed: 1},
		func(p aqm.Packet[string], why aqm.Verdict) { fmt.Println(why, p.Payload) })
	if err != nil {
		panic(err)
	}
	now := aqm.Time(time.Second)
	for i := 1; i <= 4; i++ {
		q.Enqueue(aqm.Packet[string]{Payload: fmt.Sprint("bulk-", i), Meta: aqm.Meta{Size: 1500, Hash: 1}}, now)
	}
	v := q.Enqueue(aqm.Packet[string]{Payload: "ping", Meta: aqm.Meta{Size: 100, Hash: 2}}, now)
	fmt.Println("ping:", v)
	for {
		p, ok := q.Dequeue(now)
		if !ok {
			break
		}
		fmt.Println("sent", p.Payload)
	}
	// Output:
	// dropped-overlimit bulk-4
	// ping: enqueued
	// sent bulk-1
	// sent ping
	// sent bulk-2
	// sent bulk-3
}

// Detail reports the SFQ's own state: active flows, the longest flow, and
// the drop counters.
func ExampleQueue_Detail() {
	q, _ := sfq.New[int](sfq.Config{DepthPackets: 2, Seed: 1}, nil)
	for i := range 3 {
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: 1}}, 1)
	}
	q.Enqueue(aqm.Packet[int]{Payload: 9, Meta: aqm.Meta{Size: 1000, Hash: 2}}, 1)
	d := q.Detail()
	fmt.Println("flows:", d.ActiveFlows, "longest:", d.LongestFlowPackets, "depth drops:", d.DroppedDepth)
	// Output:
	// flows: 2 longest: 2 depth drops: 1
}

// ConfigForLink sizes the limits for a link: four round trips at the
// rate. A zero Seed (the default) keys the hash from crypto/rand; Config
// reports the effective configuration.
func ExampleConfigForLink() {
	cfg := sfq.ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	q, err := sfq.New[int](cfg, nil)
	if err != nil {
		panic(err)
	}
	c := q.Config()
	fmt.Println("limit:", c.LimitPackets, "packets,", c.LimitBytes, "bytes; quantum:", c.QuantumBytes, "; seeded:", c.Seed != 0)
	// Output:
	// limit: 265 packets, 400000 bytes; quantum: 1514 ; seeded: true
}
