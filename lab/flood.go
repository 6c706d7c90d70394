package lab

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// runFlood sends an unresponsive UDP load from a raw socket (IP_HDRINCL),
// so that it can draw a new source port for every packet without opening
// a socket per packet. The kernel fills in the IP checksum and ID; the UDP
// checksum is left 0 (allowed for IPv4). It sends at most rate × duration
// bytes, paced in 1 ms steps, and stops at f.Stop.
func runFlood(ctx context.Context, epoch time.Time, p Plan, f FloodSpec) FloodResult {
	var fr FloodResult
	if f.Size <= 0 {
		f.Size = 1500
	}
	if f.Size < 28 || f.Size > 1500 || f.Rate == 0 || f.Stop <= f.Start {
		fr.Err = fmt.Sprintf("flood: size %d, rate %v, %v..%v out of range", f.Size, f.Rate, f.Start, f.Stop)
		return fr
	}
	dst := net.ParseIP(p.Server).To4()
	if dst == nil {
		fr.Err = "flood: server is not IPv4"
		return fr
	}
	src, err := localAddrFor(p.Server)
	if err != nil {
		fr.Err = err.Error()
		return fr
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		fr.Err = fmt.Sprintf("flood: raw socket: %v", err)
		return fr
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], dst)

	pkt := make([]byte, f.Size)
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], uint16(f.Size))
	pkt[8] = 64
	pkt[9] = unix.IPPROTO_UDP
	copy(pkt[12:], src)
	copy(pkt[16:], dst)
	binary.BigEndian.PutUint16(pkt[20:], 40000)
	binary.BigEndian.PutUint16(pkt[22:], uint16(p.SinkPort))
	binary.BigEndian.PutUint16(pkt[24:], uint16(f.Size-20))

	rng := rand.New(rand.NewPCG(f.Seed, 0x666c6f6f64))
	if !sleepUntil(ctx, epoch.Add(f.Start)) {
		return fr
	}
	start := time.Now()
	dur := f.Stop - f.Start
	perSec := float64(f.Rate) / 8 / float64(f.Size)
	limit := int64(perSec*dur.Seconds()) + 1
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for fr.Packets < limit {
		el := time.Since(start)
		if el >= dur {
			break
		}
		due := int64(perSec*el.Seconds()) + 1
		if due > limit {
			due = limit
		}
		for fr.Packets < due {
			if f.RandomPorts {
				binary.BigEndian.PutUint16(pkt[20:], uint16(1024+rng.IntN(65536-1024)))
			}
			if err := unix.Sendto(fd, pkt, 0, sa); err != nil {
				if err == unix.ENOBUFS || err == unix.EAGAIN {
					break // the local device queue is full: a dropped packet, as a real flood would see
				}
				fr.Err = fmt.Sprintf("flood: sendto: %v", err)
				return fr
			}
			fr.Packets++
			fr.Bytes += int64(f.Size)
		}
		select {
		case <-ctx.Done():
			return fr
		case <-tick.C:
		}
	}
	return fr
}

// localAddrFor returns the source address the routing table picks for dst.
func localAddrFor(dst string) (net.IP, error) {
	c, err := net.Dial("udp4", net.JoinHostPort(dst, "9"))
	if err != nil {
		return nil, fmt.Errorf("flood: route to %s: %v", dst, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.To4(), nil
}
