package front

import (
	"context"
	"iter"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// IPPath is an [IP] front whatever the class type of its queue, so that a
// program can hold the front of a queue chosen at run time (package queues'
// NewIP returns one) without naming that type: its producer side, its
// consumer side, its rate and shutdown, and what it reports. For the rest
// ([IP.Reconfigure], [IP.WithQueue]) assert the concrete type.
type IPPath interface {
	Enqueue(b *Buf) (aqm.Verdict, error)
	EnqueueBatch(bs []*Buf, vs []aqm.Verdict) (int, error)
	DequeueBatch(ctx context.Context, bs []*Buf) (int, error)
	TryDequeueBatch(bs []*Buf) (int, time.Duration)
	Run(ctx context.Context, send func([]*Buf)) error
	SetRate(r aqm.Rate) error
	Config() IPConfig
	Close()
	Flush(drop aqm.DropFunc[*Buf]) int
	Stats() aqm.Stats
	Detail() IPDetail
	Metrics() iter.Seq[aqm.Metric]
}

var _ IPPath = (*IP[NoInfo])(nil)
