package front

import (
	"context"
	"iter"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// IPPath is what every [IP] front offers whatever the class type of its
// queue, so that a program can hold the front of a queue chosen at run time
// (package queues' NewIP returns one) without naming that type.
type IPPath interface {
	Enqueue(b *Buf) (aqm.Verdict, error)
	EnqueueBatch(bs []*Buf, vs []aqm.Verdict) (int, error)
	DequeueBatch(ctx context.Context, bs []*Buf) (int, error)
	TryDequeueBatch(bs []*Buf) (int, time.Duration)
	Run(ctx context.Context, send func([]*Buf)) error
	SetRate(r aqm.Rate) error
	Config() IPConfig
	Close()
	Closed() bool
	Flush(drop aqm.DropFunc[*Buf]) int
	Len() int
	Backlog() int
	Stats() aqm.Stats
	Detail() IPDetail
	Metrics() iter.Seq[aqm.Metric]
	WithQueue(fn func(q aqm.Queue[*Buf]))
}

var _ IPPath = (*IP[NoInfo])(nil)
