#!/bin/sh
# run.sh builds redstudy against the system's ns-3 3.37, runs RED (gentle
# off), Gentle RED and ARED for seeds (RngRun) 1..N, runs the simulator's
# red-family scenario for the same seeds, and prints both CSVs' summaries
# (mean ± sample standard deviation over the seeds).
#
# usage: bench/ns3/run.sh [seeds] [outdir]     (defaults: 10, bench/ns3/out)
# environment: CXX (g++), SIM=0 to skip the simulator side.
set -eu

seeds=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${2:-$here/out}
mkdir -p "$out"

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
for v in red gentle ared; do
	for run in $(seq 1 "$seeds"); do
		"$out/redstudy" --variant=$v --run="$run" $first >>"$ns3csv" 2>>"$out/ns3.log"
		first=
	done
done

simcsv=$out/sim.csv
if [ "${SIM:-1}" != 0 ]; then
	(cd "$root" && go run bench/ns3/simside.go -seeds "$seeds") >"$simcsv"
fi

# summary prints, per variant, mean ± sample sd of each column of a CSV.
summary() {
	awk -F, -v title="$1" '
	NR == 1 { for (i = 3; i <= 16; i++) name[i] = $i; next }
	{
		v = $1
		if (!(v in n)) order[++nv] = v
		n[v]++
		for (i = 3; i <= 16; i++) { s[v, i] += $i; ss[v, i] += $i * $i }
	}
	END {
		printf "%s\n", title
		for (k = 1; k <= nv; k++) {
			v = order[k]
			printf "  %-7s (%d runs)\n", v, n[v]
			for (i = 3; i <= 16; i++) {
				m = s[v, i] / n[v]
				var = n[v] > 1 ? (ss[v, i] - n[v] * m * m) / (n[v] - 1) : 0
				if (var < 0) var = 0
				printf "    %-15s %12.4f ± %.4f\n", name[i], m, sqrt(var)
			}
		}
	}' "$2"
}

summary "ns-3 3.37 ($ns3csv)" "$ns3csv"
if [ -s "$simcsv" ] && [ "${SIM:-1}" != 0 ]; then
	summary "aqmkit simulator ($simcsv; its queue is the whole backlog: disc_q = total_q)" "$simcsv"
fi
