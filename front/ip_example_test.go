package front_test

import (
	"context"
	"fmt"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// A router's queue for raw IP packets: CAKE classifies them itself (hosts,
// DiffServ tins, ACK filter) and shapes, so the front runs at rate 0; the
// pool takes back what the queue drops, and Run gives back what was sent.
func ExampleNewIP() {
	pool, _ := front.NewPool(front.PoolConfig{})
	q, _ := cake.New(cake.Config{ACKFilter: cake.ACKFilterConservative, Seed: 1}, pool.Drop)
	f, _ := front.NewIP(q, nil, front.IPConfig{Pool: pool})
	for ack := range uint32(5) { // five pure ACKs of one connection, as a TUN read gives them
		b := pool.Get()
		b.B = b.B[:copy(b.B, v4pkt(hostA, peer, 6, 0, pureACK(40000, 443, 1000*(ack+1))))]
		f.Enqueue(b)
	}
	f.Close()
	_ = f.Run(context.Background(), func(bs []*front.Buf) {
		for _, b := range bs {
			e, _ := iphdr.ParseEndpoints(b.B)
			fmt.Println("sent", e.Src, "->", e.Dst)
		}
	})
	d := f.Detail()
	fmt.Println("dropped by the ACK filter:", d.Pool.Dropped.Packets)
	fmt.Println("buffers allocated:", d.Pool.Allocated, "free:", d.Pool.Free) // the dropped ones were reused
	// Output:
	// sent 10.0.0.1:40000 -> 192.0.2.9:443
	// sent 10.0.0.1:40000 -> 192.0.2.9:443
	// dropped by the ACK filter: 3
	// buffers allocated: 3 free: 3
}

// Any other queue reads its packets through iphdr's keyed flow hash.
func ExampleHashIP() {
	q, _ := fifo.New[*front.Buf](fifo.Config{}, nil)
	f, _ := front.NewIP(front.HashIP(q, iphdr.NewHasher()), nil, front.IPConfig{Config: front.Config{Rate: 50 * aqm.Mbit}})
	fmt.Println(f.Config().Rate, f.Detail().WakeSlack)
	// Output:
	// 50mbit 1ms
}
