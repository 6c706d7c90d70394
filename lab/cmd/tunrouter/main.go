// Command tunrouter is the smallest router on aqmkit: every packet routed
// into a TUN device waits in a queue per destination /24 (or /64) at a rate,
// and is written back. Put it in a path with aqmrouter's routing recipe.
package main

import (
	"context"
	"flag"
	"log"
	"net/netip"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
	"github.com/aqmkit/aqmkit/lab/tun"
	"github.com/aqmkit/aqmkit/queues"
)

func main() {
	name, rate := flag.String("aqm", "fq-codel", "queue"), 50*aqm.Mbit
	flag.Var(&rate, "rate", "rate of each direction")
	flag.Parse()
	dev, err := tun.Open(tun.Config{Name: "tun0"})
	if err != nil {
		log.Fatal(err)
	}
	pool, _ := front.NewPool(front.PoolConfig{})
	fronts := map[netip.Prefix]front.IPPath{}
	for {
		b := pool.Get()
		n, err := dev.Read(b.B[:cap(b.B)])
		if err != nil {
			log.Fatal(err)
		}
		b.B = b.B[:n]
		e, err := iphdr.ParseEndpoints(b.B)
		dst := e.Dst.Addr()
		if err != nil {
			pool.Put(b)
			continue
		}
		dir, _ := dst.Prefix(map[bool]int{true: 24, false: 64}[dst.Is4()])
		f := fronts[dir]
		if f == nil {
			if f, err = queues.NewIP(*name, queues.Options{Rate: rate}, nil, front.IPConfig{Pool: pool}); err != nil {
				log.Fatal(err)
			}
			fronts[dir] = f
			go f.Run(context.Background(), func(bs []*front.Buf) {
				for _, b := range bs {
					dev.Write(b.B)
				}
			})
		}
		f.Enqueue(b)
	}
}
