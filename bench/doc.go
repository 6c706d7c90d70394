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
// The simulator lives in [github.com/aqmkit/aqmkit/bench/sim] and its command
// in bench/cmd/aqmsim; bench/dpdkref times DPDK's C RED and PIE in the same
// scenarios.
//
// # Differences and decisions
//
//   - Every row goes through the aqm.Queue interface, as generic user code
//     would: the figures include four indirect calls per packet (about 15 ns
//     on the project's machine), which a caller holding the concrete type
//     does not pay. The algorithm packages' own benchmarks use the concrete
//     types.
//   - Time is a counter advanced by the scenario's step, never a clock read,
//     so the figures are the queue's cost alone.
//   - The harness counts forwarded packets instead of copying each one out:
//     copying the returned Packet costs any Go caller a store-forwarding
//     stall of about 10 ns that is not the queue's.
//   - Each scenario is configured per algorithm so that it means the same
//     thing for all: "standing" below every AQM's target, "congested" on its
//     drop or mark path (the signals/pkt metric shows it).
package bench
