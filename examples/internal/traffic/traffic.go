// Package traffic generates paced UDP flows and records their one-way delay
// at a receiver, for the example programs and their tests. Sender and
// receiver must run in the same process: delays are measured on the
// process's monotonic clock.
package traffic

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/examples/internal/ecnsock"
)

// HeaderBytes is the size of the header at the start of every datagram:
// flow (1 byte), sequence number (8), send time in ns since the process's
// base instant (8).
const HeaderBytes = 17

var base = time.Now()

// Since returns the process-wide monotonic time used in the headers.
func Since() time.Duration { return time.Since(base) }

// Flow describes one paced sender.
type Flow struct {
	ID            byte    // written into every datagram
	PacketsPerSec float64 // pacing rate
	SizeBytes     int     // UDP payload size, at least HeaderBytes
	Count         int     // packets to send in all
	TOS           byte    // IP TOS byte: its low two bits are the ECN field
}

// Send sends f's datagrams to dst from a new socket, paced at f's rate
// (catching up in bursts if it falls behind), until Count are sent or ctx
// ends. It returns the number sent.
func Send(ctx context.Context, dst netip.AddrPort, f Flow) (int, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(dst))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if f.TOS != 0 {
		if err := ecnsock.SetTOS(c, f.TOS); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return 0, err
		}
	}
	buf := make([]byte, max(f.SizeBytes, HeaderBytes))
	buf[0] = f.ID
	gap := time.Duration(float64(time.Second) / f.PacketsPerSec)
	start := time.Now()
	timer := time.NewTimer(0) // one timer, reset per wake-up
	defer timer.Stop()
	<-timer.C
	sent := 0
	for sent < f.Count {
		due := min(int(time.Since(start)/gap)+1, f.Count)
		for ; sent < due; sent++ {
			binary.BigEndian.PutUint64(buf[1:], uint64(sent))
			binary.BigEndian.PutUint64(buf[9:], uint64(Since()))
			if _, err := c.Write(buf); err != nil {
				return sent, err
			}
		}
		timer.Reset(time.Until(start.Add(time.Duration(sent) * gap)))
		select {
		case <-ctx.Done():
			return sent, nil
		case <-timer.C:
		}
	}
	return sent, nil
}

// Sample is one received datagram.
type Sample struct {
	Flow     byte
	Seq      uint64
	Sent     time.Duration // send time, from the header
	Received time.Duration // arrival time on the same clock
	TOS      byte          // IP TOS byte as received (ECN in the low two bits)
	Size     int           // UDP payload bytes
}

// Delay returns the one-way delay.
func (s Sample) Delay() time.Duration { return s.Received - s.Sent }

// Receiver records every datagram that arrives on its socket.
type Receiver struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	samples []Sample
	done    chan struct{}
}

// Listen starts a receiver on 127.0.0.1 at a free port.
func Listen() (*Receiver, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	if err := ecnsock.EnableRecvTOS(c); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		c.Close()
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	r := &Receiver{conn: c, done: make(chan struct{})}
	go r.loop()
	return r, nil
}

// Addr returns the receiver's address.
func (r *Receiver) Addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (r *Receiver) loop() {
	defer close(r.done)
	buf := make([]byte, 65536)
	oob := make([]byte, ecnsock.OOBSize)
	for {
		n, oobn, _, _, err := r.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		at := Since()
		if n < HeaderBytes {
			continue
		}
		tos, _ := ecnsock.TOS(oob[:oobn])
		s := Sample{
			Flow:     buf[0],
			Seq:      binary.BigEndian.Uint64(buf[1:]),
			Sent:     time.Duration(binary.BigEndian.Uint64(buf[9:])),
			Received: at,
			TOS:      tos,
			Size:     n,
		}
		r.mu.Lock()
		r.samples = append(r.samples, s)
		r.mu.Unlock()
	}
}

// Samples returns a copy of what has arrived so far.
func (r *Receiver) Samples() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.samples)
}

// Close stops the receiver, waits for its goroutine, and returns every
// sample.
func (r *Receiver) Close() []Sample {
	r.conn.Close()
	<-r.done
	return r.Samples()
}

// Select returns the samples of flow sent in [from, to).
func Select(samples []Sample, flow byte, from, to time.Duration) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Flow == flow && s.Sent >= from && s.Sent < to {
			out = append(out, s)
		}
	}
	return out
}

// Percentile returns the q-quantile (0 ≤ q ≤ 1, nearest rank) of the
// samples' delays, or zero if there are none.
func Percentile(samples []Sample, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	d := make([]time.Duration, len(samples))
	for i, s := range samples {
		d[i] = s.Delay()
	}
	slices.Sort(d)
	i := int(q*float64(len(d)-1) + 0.5)
	return d[i]
}

// CE counts the samples that arrived with the ECN field set to CE.
func CE(samples []Sample) int {
	n := 0
	for _, s := range samples {
		if s.TOS&3 == 3 {
			n++
		}
	}
	return n
}
