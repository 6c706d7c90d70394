package dualq_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// Example sends one L4S and one Classic packet through a DualPI2 queue.
// The L4S packet waited 2 ms, past the 1 ms step, so it leaves marked.
func Example() {
	q, err := dualq.New[string](dualq.Config{Seed: 1}, nil)
	if err != nil {
		panic(err)
	}
	now := aqm.Time(time.Second)
	q.Enqueue(aqm.Packet[string]{Payload: "classic", Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, now)
	q.Enqueue(aqm.Packet[string]{Payload: "l4s", Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT1}}, now)
	now = now.Add(2 * time.Millisecond)
	for {
		p, ok := q.Dequeue(now)
		if !ok {
			break
		}
		fmt.Println(p.Payload, p.ECN)
	}
	d := q.Detail()
	fmt.Println("step marks:", d.MarkedStep, "credit:", d.Credit)
	// Output:
	// l4s CE
	// classic ECT(0)
	// step marks: 1 credit: -120000
}

// ExampleQueue_Detail shows the coupling after the PI controller has seen
// a Classic head delay of 16 ms and then 32 ms: p' = 0.10528, the Classic
// probability is p'^2 and the coupled L4S probability is 2·p'.
func ExampleQueue_Detail() {
	q, _ := dualq.New[int](dualq.Config{Seed: 1}, nil)
	t0 := aqm.Time(time.Second)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, t0)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, t0.Add(16*time.Millisecond))
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, t0.Add(32*time.Millisecond))
	d := q.Detail()
	fmt.Printf("p'=%.5f p_C=%.5f p_CL=%.5f delay=%v\n", d.Prob, d.ProbClassic, d.ProbL4SCoupled, d.DelayClassic)
	// Output:
	// p'=0.10528 p_C=0.01108 p_CL=0.21056 delay=32ms
}

// ConfigForLink sizes the limits for a link, and Config reports every
// effective value, for example to size a buffer pool to the packet limit.
func ExampleConfigForLink() {
	q, err := dualq.New[int](dualq.ConfigForLink(100*aqm.Mbit, 50*time.Millisecond), nil)
	if err != nil {
		panic(err)
	}
	c := q.Config()
	fmt.Println("pool:", c.LimitPackets, "packets; memory limit:", c.LimitBytes, "bytes; target:", c.Target)
	// Output:
	// pool: 1652 packets; memory limit: 2500000 bytes; target: 15ms
}
