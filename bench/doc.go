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
//
// The simulator lives in [github.com/aqmkit/aqmkit/sim] and its command
// in sim/cmd/aqmsim; bench/dpdkref times DPDK's C RED and PIE in the same
// scenarios.
//
// # Differences and decisions
//
//   - Every row goes through the aqm.Queue interface, as generic user code
//     would: two indirect calls per packet (Enqueue and Dequeue), each
//     through the compiler's wrapper for a generic type. The harness counts
//     the queue's depth itself, from verdicts, Dequeues and DropFunc calls,
//     as the C reference harness reads its ring's count. The algorithm
//     packages' own benchmarks use the concrete types.
//   - Time is a counter advanced by the scenario's step, never a clock read,
//     so the figures are the queue's cost alone.
//   - Every dequeued packet is used (the harness sums the payloads).
//   - Each scenario is configured per algorithm so that it means the same
//     thing for all: "standing" below every AQM's target, "congested" on its
//     drop or mark path (the signals/pkt metric shows it).
package bench
