// Package peers benchmarks aqmkit's fronts side by side with the Go queue
// that user-space network stacks actually run: gVisor netstack's fifo
// queueing discipline (gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo). It is
// a module of its own so that no other aqmkit module requires gVisor.
//
// Run it from this directory, outside the repository's workspace:
//
//	GOWORK=off go test -run XXX -bench . -benchtime 200ms -count 6
package peers
