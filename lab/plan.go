package lab

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Plan is what one client agent does in one run, in one client namespace.
// Every offset is from Epoch, a wall-clock instant shared by all the
// agents of a run (they run on one machine), so flows started by agents in
// different namespaces line up.
type Plan struct {
	Run     string `json:"run"`      // a token naming the run to the server
	Server  string `json:"server"`   // the server's address, 10.201.2.2
	TCPPort int    `json:"tcp_port"` // the server agent's TCP port (flows and reports)
	UDPPort int    `json:"udp_port"` // the server agent's UDP echo port (probe)
	// SinkPort is the server agent's UDP sink, the flood's destination.
	SinkPort int `json:"sink_port"`
	// Epoch is the run's start, in Unix nanoseconds.
	Epoch int64 `json:"epoch_unix_ns"`
	// End is when the agent stops the probe and collects the reports;
	// nothing in the plan may end after it.
	End         time.Duration `json:"end_ns"`
	SampleEvery time.Duration `json:"sample_every_ns"` // receiver byte counts, default 100 ms
	Flows       []FlowSpec    `json:"flows,omitempty"`
	Probe       *ProbeSpec    `json:"probe,omitempty"`
	Floods      []FloodSpec   `json:"floods,omitempty"`
}

// FlowSpec is one bulk TCP transfer.
type FlowSpec struct {
	ID  int    `json:"id"`
	Dir string `json:"dir"` // "up" (client sends) or "down" (server sends)
	// CC is the sender's congestion control (TCP_CONGESTION): cubic, bbr,
	// reno; empty means the namespace's default.
	CC string `json:"cc,omitempty"`
	// MSS, if not 0, is set with TCP_MAXSEG on the client's socket before
	// it connects, so it bounds both directions: the client's own segments
	// and, through the MSS option it announces, the server's.
	MSS   int           `json:"mss,omitempty"`
	Start time.Duration `json:"start_ns"`
	Stop  time.Duration `json:"stop_ns"`
	// Path is the client the flow runs from: 0 the main client, k+1 the
	// client of the topology's extra path k.
	Path int `json:"path,omitempty"`
}

// ProbeSpec is the UDP echo latency probe.
type ProbeSpec struct {
	Interval time.Duration `json:"interval_ns"` // default 10 ms
	Size     int           `json:"size"`        // UDP payload bytes, default 64
	Start    time.Duration `json:"start_ns"`
	Stop     time.Duration `json:"stop_ns"`
}

// FloodSpec is an unresponsive UDP load sent from a raw socket.
type FloodSpec struct {
	Rate aqm.Rate `json:"rate"` // IP bytes per second ×8
	Size int      `json:"size"` // IP packet size in bytes, default 1500
	// RandomPorts draws a new source port for every packet (a new flow to
	// a flow-queuing AQM each time); false keeps one 5-tuple.
	RandomPorts bool          `json:"random_ports"`
	Start       time.Duration `json:"start_ns"`
	Stop        time.Duration `json:"stop_ns"`
	Seed        uint64        `json:"seed"`
}

// ClientResult is what a client agent reports for its plan.
type ClientResult struct {
	Flows  []FlowResult  `json:"flows"`
	Probe  *ProbeResult  `json:"probe,omitempty"`
	Floods []FloodResult `json:"floods,omitempty"`
	// Sink is the server's UDP sink counters at the end of the run.
	Sink   SinkCounts `json:"sink"`
	Errors []string   `json:"errors,omitempty"`
}

// ByteSample is a receiver's cumulative in-order byte count at offset T.
type ByteSample struct {
	T     time.Duration `json:"t_ns"`
	Bytes int64         `json:"bytes"`
}

// SenderInfo is the sender's TCP_INFO at the end of a flow.
type SenderInfo struct {
	BytesSent    uint64        `json:"bytes_sent"`
	BytesRetrans uint64        `json:"bytes_retrans"`
	BytesAcked   uint64        `json:"bytes_acked"`
	TotalRetrans uint32        `json:"total_retrans"`
	DeliveredCE  uint32        `json:"delivered_ce"`
	MinRTT       time.Duration `json:"min_rtt_ns"`
	SRTT         time.Duration `json:"srtt_ns"`
	SndMSS       uint32        `json:"snd_mss"`
	CC           string        `json:"cc"`
}

// FlowResult is one flow's outcome: the receiver's byte counts over time
// and the sender's TCP_INFO.
type FlowResult struct {
	FlowSpec
	Samples []ByteSample `json:"samples"`
	Bytes   int64        `json:"bytes"` // received in total
	Sender  *SenderInfo  `json:"sender,omitempty"`
	Err     string       `json:"err,omitempty"`
}

// ProbeSample is one probe packet: its send offset and round-trip time
// (negative when no echo came back).
type ProbeSample struct {
	T   time.Duration `json:"t_ns"`
	RTT time.Duration `json:"rtt_ns"`
}

// ProbeResult is the probe's outcome.
type ProbeResult struct {
	Sent    int           `json:"sent"`
	Lost    int           `json:"lost"`
	Samples []ProbeSample `json:"samples"`
}

// FloodResult counts what a flood sent.
type FloodResult struct {
	Packets int64  `json:"packets"`
	Bytes   int64  `json:"bytes"`
	Err     string `json:"err,omitempty"`
}

// SinkCounts is what the server's UDP sink received.
type SinkCounts struct {
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
}

// flowHeader opens every TCP connection to the server agent.
type flowHeader struct {
	Op    string        `json:"op"` // "up", "down" or "report"
	Run   string        `json:"run"`
	ID    int           `json:"id"`
	CC    string        `json:"cc,omitempty"`
	Epoch int64         `json:"epoch_unix_ns"`
	Stop  time.Duration `json:"stop_ns"`
	Every time.Duration `json:"sample_every_ns"`
	IDs   []int         `json:"ids,omitempty"` // for "report"
}

// serverReport is the server's answer to "report".
type serverReport struct {
	Flows map[int]serverFlow `json:"flows"`
	Sink  SinkCounts         `json:"sink"`
}

// serverFlow is the server's side of one flow: its receive samples for an
// upload, its TCP_INFO for a download.
type serverFlow struct {
	Samples []ByteSample `json:"samples,omitempty"`
	Bytes   int64        `json:"bytes"`
	Sender  *SenderInfo  `json:"sender,omitempty"`
	Err     string       `json:"err,omitempty"`
}
