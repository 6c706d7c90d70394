// Package bench holds aqmkit's cross-algorithm benchmarks and its
// deterministic bottleneck simulator.
//
// BenchmarkPacket runs one table over every queue in the library:
//
//	go test ./bench -run '^$' -bench BenchmarkPacket -benchmem -count 5
//
// Each sub-benchmark is named BenchmarkPacket/<algo>/<scenario>; one op is
// one packet forwarded (an Enqueue plus the Dequeue that keeps the queue at
// its scenario depth), with time passed explicitly as a counter, never read
// from a clock. The baselines ring and chan in the same table are a bare ring
// push+pop and a buffered channel send+receive, so every figure reads as a
// ratio to them.
package bench
