#!/bin/sh
# run.sh builds redstudy against the system's ns-3 3.37, runs RED (gentle
# off), Gentle RED and ARED for seeds (RngRun) 1..N, runs the simulator's
# red-family scenario for the same seeds, and prints both CSVs' summaries
# (mean ± sample standard deviation over the seeds).
#
# usage: bench/ns3/run.sh [seeds] [outdir]     (defaults: 10, bench/ns3/out)
# environment: CXX (g++), SIM=0 to skip the simulator side, DURATION=S to
# simulate S seconds instead of 60 (the window then starts at S/6, at most
# 10 s), as the split of drops between start-up and steady state needs;
# VARIANTS="red gentle ared droptail" picks redstudy's variants (droptail:
# the disc as a plain tail drop of its limit, the TCP alone).
set -eu

seeds=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${2:-$here/out}
mkdir -p "$out"
dur=${DURATION:-60}
case $dur in
'' | *[!0-9]*) echo "run.sh: DURATION must be a positive integer number of seconds, not '$dur'" >&2; exit 2 ;;
esac
[ "$dur" -ge 2 ] || { echo "run.sh: DURATION must be at least 2 s" >&2; exit 2; }
warm=$(awk -v d="$dur" 'BEGIN { w = d / 6; if (w > 10) w = 10; print w }')

case $seeds in
'' | *[!0-9]*) echo "run.sh: seeds must be a positive integer, not '$seeds'" >&2; exit 2 ;;
esac
[ "$seeds" -ge 1 ] || { echo "run.sh: seeds must be at least 1" >&2; exit 2; }

mods="ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control"
if ! pkg-config --exists $mods; then
	echo "run.sh: pkg-config finds no ns-3 3.37 ($mods); install libns3-dev" >&2
	exit 1
fi
# Only -L and -l: Debian's ns3 .pc files also name libgsl.so and
# libgslcblas.so by absolute path (present only with libgsl-dev; the ns-3
# libraries already link the runtime .so.27), and their Cflags hold a
# stray "-I/usr;". The headers are in /usr/include/ns3, on the default path.
${CXX:-g++} -std=c++17 -O2 -Wall -Wextra -o "$out/redstudy" "$here/redstudy.cc" \
	$(pkg-config --libs-only-L --libs-only-l $mods)

ns3csv=$out/ns3.csv
: >"$ns3csv"
first=--header
variants=${VARIANTS:-red gentle ared}
for v in $variants; do
	for run in $(seq 1 "$seeds"); do
		"$out/redstudy" --variant=$v --run="$run" --duration="$dur" --warmup="$warm" $first >>"$ns3csv" 2>>"$out/ns3.log"
		first=
	done
done

simcsv=$out/sim.csv
if [ "${SIM:-1}" != 0 ]; then
	(cd "$root" && go run bench/ns3/simside.go -seeds "$seeds" -duration "${dur}s" \
		-variants "$(echo $variants | tr ' ' ',')") >"$simcsv"
fi

echo "ns-3 3.37 ($ns3csv)"
awk -f "$here/summary.awk" "$ns3csv"
if [ "${SIM:-1}" != 0 ]; then
	echo "aqmkit simulator ($simcsv; its queue is the whole backlog: disc_q = total_q)"
	awk -f "$here/summary.awk" "$simcsv"
fi
