package front

// Test-only views of unexported parts of the API.

// ShardAt is Shard for tests, which know i is in range.
func (s *Sharded[T]) ShardAt(i int) *Front[T] { return s.shards[i] }

// ShardOf returns the shard a packet with hash h goes to.
func (s *Sharded[T]) ShardOf(h uint32) int { return s.shardOf(h) }

// Shards returns the number of shards.
func (s *Sharded[T]) Shards() int { return len(s.shards) }
