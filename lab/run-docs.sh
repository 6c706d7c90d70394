#!/bin/sh
# run-docs.sh runs the measurements of docs/results/lab.md: one aqmlab invocation
# per stage, each interleaving its configurations and rotating their order
# over 3 repetitions, into OUT/<stage>/ (summary.txt, summary.csv, runs.csv,
# results.json, plots/), with the machine's load average before and after
# each stage in OUT/<stage>.load and aqmlab's progress in OUT/<stage>.log.
#
#   sudo ./run-docs.sh [OUT [STAGE...]]     (in lab/; default OUT docs-out)
#
# Stages, in priority order (default: a b c d e, about 50 minutes):
#   a  rrul, 50 Mb/s, 20 ms, CUBIC and BBR: FIFO 1000, FQ-CoDel, CAKE,
#      FQ-COBALT, FQ-PIE, kernel htb + pfifo 1000 (36 runs, ~14 min)
#   b  the same at 200 Mb/s (36 runs, ~14 min)
#   c  rrul, 50 Mb/s, CUBIC and BBR: CoDel, PIE, DualPI2, RED (24 runs, ~9 min)
#   d  unshaped forwarding: the flood at 1 Gb/s into a router at -rate 0,
#      FIFO against FQ-CoDel (12 runs, ~4 min); the router CPU with a queue
#      against delay-only is stage a's FQ-CoDel against its kernel anchor
#   e  the flood, one 5-tuple and random ports, every registry queue, router
#      memory, one repetition (26 runs, ~9 min)
#   f  the speed-test study and the RED study (not in the default; ~25 min)
#   g  the flood with the flood guard on and off: FQ-CoDel, CAKE, FQ-COBALT,
#      FQ-PIE each both ways, and FIFO 1000; one 5-tuple and random ports
#      (54 runs, ~21 min)
#   h  rrul, 50 Mb/s, CUBIC and BBR, the guard on and off: FQ-CoDel, CAKE,
#      and FIFO 1000 (30 runs, ~12 min)
#   i  tcp_nup, 4 uploads, 50 Mb/s, CUBIC and BBR: FIFO 1000 and FQ-CoDel,
#      the lab's side of the simulator's cross-check (12 runs, ~5 min)
set -eu
cd "$(dirname "$0")"
OUT=${1:-docs-out}
[ $# -gt 0 ] && shift
STAGES=${*:-a b c d e}
mkdir -p "$OUT/bin"
go build -o "$OUT/bin/aqmlab" ./cmd/aqmlab
go build -o "$OUT/bin/aqmrouter" ./cmd/aqmrouter
git rev-parse HEAD >"$OUT/commit" 2>/dev/null || true

stage() {
	name=$1
	shift
	echo "== $name: aqmlab $*" | tee "$OUT/$name.load"
	cat /proc/loadavg >>"$OUT/$name.load"
	"$OUT/bin/aqmlab" -router "$OUT/bin/aqmrouter" -out "$OUT/$name" "$@" 2>&1 | tee "$OUT/$name.log"
	cat /proc/loadavg >>"$OUT/$name.load"
}

FQ=fifo:1000,fq-codel,cake,fq-cobalt,fq-pie
NG=fq-codel,fq-codel-noguard=fq-codel[disable-flood-guard=true],cake,cake-noguard=cake[disable-flood-guard=true]
NG4=$NG,fq-cobalt,fq-cobalt-noguard=fq-cobalt[disable-flood-guard=true],fq-pie,fq-pie-noguard=fq-pie[disable-flood-guard=true]
ALL=fifo:1000,red,gentle-red,ared,codel,cobalt,pie,dualpi2,fq-codel,fq-cobalt,fq-pie,sfq,cake
for s in $STAGES; do
	case $s in
	a) stage a-rrul-50 -rate 50mbit -rtt 20ms -duration 15s -cc cubic,bbr -reps 3 -queues $FQ -kernel pfifo:1000 rrul ;;
	b) stage b-rrul-200 -rate 200mbit -rtt 20ms -duration 15s -cc cubic,bbr -reps 3 -queues $FQ -kernel pfifo:1000 rrul ;;
	c) stage c-rrul-single -rate 50mbit -rtt 20ms -duration 15s -cc cubic,bbr -reps 3 -queues codel,pie,dualpi2,red rrul ;;
	d) stage d-unshaped -rate 500mbit -rtt 20ms -duration 15s -reps 3 -queues fifo,fq-codel -router-args "-rate 0" -plots=false flood ;;
	e) stage e-flood -rate 50mbit -rtt 20ms -duration 15s -reps 1 -queues $ALL flood ;;
	f)
		stage f-speedtest -rate 50mbit -rtt 20ms -reps 3 speedtest
		stage f-red -reps 1 red
		;;
	g) stage g-flood-guard -rate 50mbit -rtt 20ms -duration 15s -reps 3 -queues "$NG4,fifo:1000" -plots=false flood ;;
	h) stage h-rrul-guard -rate 50mbit -rtt 20ms -duration 15s -cc cubic,bbr -reps 3 -queues "$NG,fifo:1000" rrul ;;
	i) stage i-nup -rate 50mbit -rtt 20ms -duration 15s -cc cubic,bbr -reps 3 -n 4 -queues fifo:1000,fq-codel tcp_nup ;;
	*)
		echo "run-docs.sh: unknown stage $s (a b c d e f g h i)" >&2
		exit 2
		;;
	esac
done
