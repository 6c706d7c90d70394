// Command aqmrouter forwards IP packets through a TUN device with an aqmkit
// queue, a rate and a delay per destination prefix: a user-space bottleneck
// router for real traffic between network namespaces.
//
//	aqmrouter -tun tun0 -aqm fq-codel -rate 50mbit -delay 10ms -stats out.json -metrics :9100
//
// It opens (or attaches to) the TUN device, reads every packet the kernel
// routes into it, gives each destination /24 (IPv4) or /64 (IPv6) its own
// queue on first use, releases each queue at the rate, holds each packet
// for the delay after it leaves its queue, writes CE into the packets the
// queue marks, and writes them back into the device. Package
// github.com/aqmkit/aqmkit/lab/router holds the logic and documents it.
//
// # Flags
//
//	-tun NAME         TUN device (default tun0); attached to if it exists
//	-aqm NAME         any name of package queues: fifo, red, gentle-red, ared,
//	                  codel, cobalt, pie, dualpi2, fq-codel (default),
//	                  fq-cobalt, fq-pie, sfq, cake
//	-limit N          each queue's packet limit (0: the preset for -rate)
//	-rate RATE        per direction, tc syntax (50mbit, 1.5gbit, 12500kbps);
//	                  0 (default) forwards unshaped: a delay-only hop
//	-burst D          the token bucket's depth as time at -rate (default
//	                  5ms): how much a late wake-up may make up at once
//	-delay D          fixed delay per direction after the queue, tc syntax
//	                  (10ms, 500us, 1.5s; a bare number is microseconds)
//	-stats FILE       the final counters as JSON, written on exit
//	-metrics ADDR     expvar at http://ADDR/debug/vars; a bare :port binds
//	                  127.0.0.1
//	-report D         a stat line on stderr every D (default 10s; 0: off)
//	-mtu N            set the device's MTU (default: keep it)
//	-queues N         TUN queues with a reader each (IFF_MULTI_QUEUE if > 1)
//	-offload          take TSO/UDP GSO super-packets through the TUN's
//	                  offloads where the kernel accepts them (default true)
//	-gso POLICY       auto (default: keep a super-packet whole when it
//	                  takes at most 2 ms at the rate, or every one while
//	                  the router is saturated; split a longer one), split,
//	                  keep
//	-auto-cap         when the router is saturated, cap each direction's
//	                  rate below what it sustains (see Load below)
//	-coalesce         with -offload, write the TCP segments of a flow that
//	                  leave together as one super-packet (default true)
//	-max-queues N     most directions (default 64); further prefixes are
//	                  dropped and counted as no_queue
//	-prefix4, -prefix6  prefix lengths of a direction (24, 64)
//	-delay-limit N    most packets per delay line (4096)
//	-buffers N        most packet buffers in use (32768)
//	-cpuprofile FILE  write a Go CPU profile of the run
//	-drain D          at exit, send what is queued for at most D (1s), then
//	                  drop the rest (counted as flushed); 0 drops at once
//
// # Load
//
// The router watches its own load every 200 ms: how much of the time its
// readers work rather than wait for packets, and tun0's tx_dropped, the
// packets the kernel dropped because the router did not read them in time.
// When it is the bottleneck (a reader never idle for two windows, or the
// kernel dropping), the standing queue is in the kernel's TUN queue, where
// no AQM sees it: the router says so once on stderr, the stat line reads
// SATURATED, and the -stats JSON ("load") and the metrics
// (aqmrouter_load: router_saturated, router_reader_busy_ratio,
// router_sustainable_bits_per_second, router_kernel_dropped_packets, ...)
// count it, with an estimate of the rate it sustains. With -gso auto it
// then keeps super-packets whole, which costs far less; with -auto-cap it
// also holds the rate at 0.9 of what it read while saturated, raising it
// again by 5 % per 200 ms once a second has passed without saturation, so
// that the queue stays in the AQM.
//
// # Autorate
//
// With -autorate, one direction's rate follows the link beyond the router,
// as cake-autorate adjusts CAKE's (package autorate holds the controller):
//
//	aqmrouter -aqm fq-codel -rate 20mbit -autorate 10.201.2.0/24 \
//	  -autorate-min 5mbit -autorate-max 60mbit -reflectors udp:10.201.2.2:5202,icmp:10.201.2.3
//
//	-autorate ADDR|PREFIX     the direction whose rate is driven; -rate is
//	                          its base rate (where it starts and decays to)
//	-autorate-min, -autorate-max  the rate's bounds (tc syntax)
//	-reflectors LIST          udp:HOST:PORT (a UDP echo that returns the
//	                          datagram) or icmp:HOST (ICMP echo; root)
//	-probe-interval D         each reflector's probe period (300ms); the
//	                          probes of all reflectors are spread evenly
//	-autorate-delay D         the delay threshold on the RTT (30ms);
//	                          increases are full below D/3, cuts above 2D
//	-autorate-achieved-cut F  a cut may go to F times the achieved rate
//	                          (0.9; 0 scales the rate alone)
//	-autorate-max-increase F  the largest share an increase adds (0.04),
//	                          at most once per 200 ms report
//	-autorate-detection N     delayed samples of the last 6 that call
//	                          bufferbloat (3)
//	-autorate-recovery F      after a run of cuts, an increase at low delay
//	                          closes F of the gap to the rate before the
//	                          first cut (0, off; 1 on cellular links)
//	-autorate-passive         also time the TCP flows forwarded to and from
//	                          the prefix (autorate.PassiveRTT), one sample
//	                          of their smallest delay rise every 50 ms;
//	                          -reflectors is then optional
//	-autorate-log FILE        every sample, report and decision as CSV
//	-autorate-passive         time the TCP flows forwarded to the direction
//	                          too, or with no -reflectors alone
//	-autorate-passive-match M echo (timestamp echoes, the default) or ack
//	                          (acknowledgement numbers)
//
// The router sends the probes itself, so they take the host's routes, not
// the TUN: they see the queues beyond the router (the bottleneck the rate
// should sit just below) and not the router's own. The achieved rate is
// what the direction wrote in each 200 ms. Without a reply for 10 s the
// rate falls back to -rate. The exit line gives the controller's counts.
//
// With -autorate-passive the router needs no reflector: it times the TCP
// flows it forwards (autorate.PassiveRTT), from each segment it writes
// towards the direction to the segment read back that echoes its
// timestamp (or acknowledges its SYN), so that its own queue is left out
// and the queue beyond it is in. Once per -probe-interval the controller
// takes, as the samples of one more reflector, the smallest rise above
// each flow's own minimum seen in the interval: a queue beyond the router
// delays every flow, and the smallest rise is free of receivers' delayed
// acknowledgements. An interval with no round trip gives no sample.
// A timestamp echo names the first of the segments an acknowledgement
// covers, so with a receiver that acknowledges every second segment its
// round trip includes the wait for the second, which grows as the rate
// falls; -autorate-passive-match ack times instead only the segment whose
// end the acknowledgement names, the one that triggered it.
//
// A CAKE queue shapes to the rate itself (its link preset); its front keeps
// a token bucket at the rate too, so that what CAKE catches up after a late
// wake-up stays within -burst. The other queues get their algorithm's preset for the rate
// (limits of four 100 ms round trips at it), or their defaults at rate 0.
// The rate counts IP bytes, without a link header.
//
// # Shutdown and stats
//
// On SIGINT or SIGTERM it stops reading, sends what is queued and delayed
// for at most the drain time, drops the rest, and writes the stats file:
//
//	{"aqm": "fq-codel", "rate": "50mbit", "delay": "10ms",
//	 "read": {"packets": 120345, "bytes": 170001234},
//	 "written": {...}, "dropped": {"total": 812, "early": 800, "overlimit": 12, ...},
//	 "marked": 0, "ce_written": 0, "queued": 0, "not_ip": 0, "unclassified": {...},
//	 "queues": [{"prefix": "10.201.1.0/24", "read": ..., "written": ..., "dropped": ...,
//	             "marked": ..., "queued": 0, "delayed": 0, "queue": {the queue's aqm.Stats}}, ...]}
//
// read = written + dropped.total + queued holds exactly, in total and per
// queue, in the stats file and in every snapshot the metrics show while it
// runs. Drop reasons: overlimit, early, overload (the queue's own), closed,
// delay_full, flushed, write_error, and, before a packet has a queue,
// not_ip, truncated, bad_header, no_queue, no_buffer. The exit status is 0
// after a clean shutdown, 2 for bad flags, 1 otherwise.
//
// # Changing the queue and rate while it runs
//
// The queue (-aqm), its settings (-params), its limit (-limit) and the rate
// (-rate) change without a restart, from two places:
//
//	aqmrouter -control /etc/aqmrouter.conf ...   # applied at start and on SIGHUP
//	    aqm = cake
//	    rate = 40mbit
//	curl -d aqm=fq-codel -d rate=45mbit -d params=target=10ms http://127.0.0.1:9100/config
//
// /config is served beside the metrics when -metrics is a loopback address;
// GET shows the settings in effect. A bad setting is refused with its name
// and nothing changes. Packets queued at a change stay queued: the queue is
// reconfigured in place when the algorithm stays, or its packets move into
// the new one (router.Router.Reconfigure). The rate cannot change between 0
// and a rate while running; with -autorate, the controller keeps setting its
// direction's rate. -fault-write-every n makes every n-th write fail, to
// test how a run copes.
//
// # Putting it in a path
//
// The router namespace (or host) forwards between r0 and r1; policy routing
// sends every packet arriving on them into the TUN, and what the router
// writes back, arriving on tun0, takes the main table out:
//
//	client ns  c0 10.201.1.2 ── r0 10.201.1.1 [router ns: tun0] r1 10.201.2.1 ── s0 10.201.2.2  server ns
//
//	ip netns exec router sh -c '
//	  sysctl -qw net.ipv4.ip_forward=1
//	  for i in all default r0 r1; do sysctl -qw net.ipv4.conf.$i.rp_filter=0; done
//	  ip tuntap add dev tun0 mode tun && ip link set tun0 up
//	  sysctl -qw net.ipv4.conf.tun0.rp_filter=0
//	  ip rule add iif r0 table 100
//	  ip rule add iif r1 table 100
//	  ip route add default dev tun0 table 100
//	  ethtool -K r0 tso off gso off gro off; ethtool -K r1 tso off gso off gro off'
//	ip netns exec router aqmrouter -tun tun0 -aqm fq-codel -rate 50mbit -delay 10ms
//
// Creating tun0 beforehand (persistent) lets the routes exist before the
// router starts; without it, aqmrouter creates tun0 and the rules and route
// are added once it runs. Reverse-path filtering must be off on tun0 and the
// veths, since tun0 is not the route back to the sources. With -offload
// (the default) the TUN takes the kernel's TSO and UDP GSO super-packets
// whole, behind a virtio-net header, where the kernel accepts the offloads
// (the router logs what it refused): -gso auto keeps a super-packet whole
// when its segments take at most 2 ms at -rate (and all of them unshaped,
// or while the router is saturated), one read and one write per
// super-packet, and splits a longer one into its segments, so that no
// queue serves more than 2 ms of one flow in one piece; a kept one is
// charged to the rate and the counters as the bytes its segments put on
// the wire. Segments that leave a queue together, split or read singly,
// are written back joined per TCP flow into super-packets (-coalesce), one
// write each, which the kernel cuts into the same segments. With the
// veths' offloads off, as above, the kernel
// sends no super-packets and the queues see packets of at most the MTU
// either way. The kernel's own packets
// on tun0 (IPv6 router solicitations to ff02::2 when the link comes up) are
// forwarded like any other and show as a queue of their own; set
// net.ipv6.conf.tun0.disable_ipv6=1 to keep them out. For a kernel anchor, run
// aqmrouter with -rate 0 -delay D and put htb (rate scaled by 1514/1500,
// since htb counts the Ethernet header) with a child qdisc on r0 and r1.
package main
