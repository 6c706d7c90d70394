package front

import (
	"context"
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
)

// Test-only views of unexported parts of the API.

// ShardAt is Shard for tests, which know i is in range.
func (s *Sharded[T]) ShardAt(i int) *Front[T] { return s.shards[i] }

// ShardOf returns the shard a packet with hash h goes to.
func (s *Sharded[T]) ShardOf(h uint32) int { return s.shardOf(h) }

// Shards returns the number of shards.
func (s *Sharded[T]) Shards() int { return len(s.shards) }

// Dequeue is DequeueBatch for one packet.
func (f *Front[T]) Dequeue(ctx context.Context) (aqm.Packet[T], error) { return f.dequeue(ctx) }

// Closed reports whether Close was called.
func (f *Front[T]) Closed() bool { return f.Detail().Closed }

// Closed reports whether Close was called.
func (x *IP[C]) Closed() bool { return x.f.Detail().Closed }

// Len returns the number of queued packets.
func (x *IP[C]) Len() int { return x.f.Len() }

// Backlog returns the number of queued bytes.
func (x *IP[C]) Backlog() int { return x.f.Backlog() }

// Dequeue is DequeueBatch for one buffer.
func (x *IP[C]) Dequeue(ctx context.Context) (*Buf, error) {
	var b [1]*Buf
	for {
		n, err := x.DequeueBatch(ctx, b[:])
		if err != nil {
			return nil, err
		}
		if n == 1 {
			return b[0], nil
		}
	}
}

// The errors for misuse at construction, and constants the tests check
// against.
var (
	ErrNilQueue     = errNilQueue
	ErrClassifiesIP = errClassifiesIP
)

const (
	MaxShards          = maxShards
	DefaultWakeSlack   = defaultWakeSlack
	MaxWakeSlack       = maxWakeSlack
	DefaultBufferBytes = defaultBufferBytes
	MaxPoolFree        = maxPoolFree
	StageLimit         = stageLimit
)

// DetailMetrics lists d's own metrics, as Front.Metrics lists them after the
// queue's.
func DetailMetrics(d Detail) iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }
