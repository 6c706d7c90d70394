package queues

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// NewIP builds the queue called name for raw IP packets and puts it behind
// an IP front ([front.NewIP]) that shapes to o.Rate: the few lines between
// a TUN device's reads and writes.
//
//	f, err := queues.NewIP("fq-codel", queues.Options{Rate: 50 * aqm.Mbit}, nil, front.IPConfig{})
//	go f.Run(ctx, func(bs []*front.Buf) { for _, b := range bs { dev.Write(b.B) } })
//	b := f.Config().Pool.Get(); n, _ := dev.Read(b.B); b.B = b.B[:n]; f.Enqueue(b)
//
// o.Rate both sizes the queue (its link preset) and sets the front's rate,
// except for a queue that shapes itself ([Spec.Shapes], CAKE), which gets
// the rate and runs behind a front at rate 0. A queue with a classifier of
// its own (CAKE: hosts, DiffServ tins, ACK filter) classifies every packet;
// any other queue sees iphdr's keyed flow hash, with a secret key (or one
// derived from o.Seed when it is set, for reproducible tests). The queue's
// drops go back to the front's pool (cfg.Pool, or a new one).
//
// c is the front's clock (nil: a clock.Coarse). cfg sets the front's burst
// and wake slack; its Rate must be zero (the rate is o.Rate) and Staged
// false, or NewIP returns a [aqm.ConfigError] naming the field.
func NewIP(name string, o Options, c clock.Clock, cfg front.IPConfig) (front.IPPath, error) {
	if cfg.Rate != 0 {
		return nil, &aqm.ConfigError{Pkg: "queues", Field: "Rate", Value: cfg.Rate, Rule: "must be 0 in the front's configuration: NewIP shapes to Options.Rate"}
	}
	spec, ok := Lookup(name)
	if !ok {
		_, err := New[*front.Buf](name, o, nil) // the unknown-name error, with the known names
		return nil, err
	}
	if cfg.Pool == nil {
		p, err := front.NewPool(front.PoolConfig{})
		if err != nil {
			return nil, err
		}
		cfg.Pool = p
	}
	q, err := New(spec.Name, o, cfg.Pool.Drop)
	if err != nil {
		return nil, err
	}
	if !spec.Shapes {
		cfg.Rate = o.Rate
	}
	if own, ok := q.(front.IPQueue[cake.Info]); ok {
		return front.NewIP(own, c, cfg)
	}
	h := iphdr.NewHasher()
	if o.Seed != 0 {
		h = iphdr.NewHasherWithKey(o.Seed, o.Seed^0x9e3779b97f4a7c15)
	}
	return front.NewIP(front.HashIP(q, h), c, cfg)
}
