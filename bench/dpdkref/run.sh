#!/usr/bin/env bash
# run.sh builds and runs the DPDK reference harness (redpie.c) and prints its
# results in Go benchmark format, so benchstat can set them beside
# `go test ./bench -bench BenchmarkPacket`. See README.md in this folder.
#
# Reference tool only: CI does not run it.
#
# Usage: bench/dpdkref/run.sh [-count N] [-iters M] [-prefix NAME] [-run SUBSTR] [-cpu C] [-v]
#                             [-mem] [-mem-stats] [-variants LIST]
#   -count N     repetitions of every benchmark (default 1; use 5+ for medians)
#   -iters M     timed iterations per benchmark and repetition (default 20000000)
#   -prefix NAME top-level benchmark name (default DPDK, giving BenchmarkDPDK/...);
#                with -prefix Packet the names equal the Go table's, for a
#                side-by-side `benchstat go.txt dpdk.txt`
#   -run SUBSTR  only benchmarks whose full name contains SUBSTR (e.g. /red/)
#   -cpu C       pin to CPU C (default: EAL uses lcore 0, then the pin is undone)
#   -v           print each AQM's final state (stderr)
#   -mem         run the mem variant instead of the normal rows: all loop, ring
#                and AQM state in static memory, and a compiler barrier after
#                every packet, so it is stored and reloaded once per packet
#                (rows BenchmarkDPDK/mem/...)
#   -mem-stats   run the memstats variant: as -mem, plus the per-packet counters
#                aqmkit queues keep (aqm.Stats, backlog) (rows .../memstats/...)
#   -variants L  comma-separated list of normal, mem, memstats, or all; with
#                -mem and -mem-stats it adds up (default: normal). Each
#                repetition runs the chosen variants of a row back to back.
set -euo pipefail

count=1
iters=20000000
prefix=DPDK
cpu=
run=
verbose=
variants=
while [ $# -gt 0 ]; do
	case "$1" in
	-count | --count) count="$2"; shift 2 ;;
	-count=* | --count=*) count="${1#*=}"; shift ;;
	-iters | --iters) iters="$2"; shift 2 ;;
	-iters=* | --iters=*) iters="${1#*=}"; shift ;;
	-prefix | --prefix) prefix="$2"; shift 2 ;;
	-prefix=* | --prefix=*) prefix="${1#*=}"; shift ;;
	-run | --run) run="$2"; shift 2 ;;
	-run=* | --run=*) run="${1#*=}"; shift ;;
	-v) verbose=-v; shift ;;
	-mem | --mem) variants="${variants:+$variants,}mem"; shift ;;
	-mem-stats | --mem-stats) variants="${variants:+$variants,}memstats"; shift ;;
	-variants | --variants) variants="${variants:+$variants,}$2"; shift 2 ;;
	-variants=* | --variants=*) variants="${variants:+$variants,}${1#*=}"; shift ;;
	-cpu | --cpu) cpu="$2"; shift 2 ;;
	-cpu=* | --cpu=*) cpu="${1#*=}"; shift ;;
	-h | -help | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument $1 (try -h)" >&2; exit 2 ;;
	esac
done
for v in "$count" "$iters" "${cpu:-0}"; do
	case "$v" in '' | *[!0-9]*) echo "run.sh: -count, -iters and -cpu take non-negative integers" >&2; exit 2 ;; esac
done

here="$(cd "$(dirname "$0")" && pwd)"

# Messages go to stderr so that stdout stays pure benchmark format.
log() { echo "run.sh: $*" >&2; }

if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libdpdk 2>/dev/null; then
	if [ "$(id -u)" != 0 ]; then
		log "libdpdk not found by pkg-config and not root: install libdpdk-dev and pkg-config, then rerun"
		exit 1
	fi
	log "libdpdk not found by pkg-config: running apt-get update && apt-get install -y libdpdk-dev pkg-config"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y --no-install-recommends libdpdk-dev pkg-config >&2
	pkg-config --exists libdpdk || { log "pkg-config still cannot find libdpdk"; exit 1; }
fi
log "using DPDK $(pkg-config --modversion libdpdk) via pkg-config"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# shellcheck disable=SC2046 # word splitting of the pkg-config flags is intended
cc -O2 -Wall -Wextra -o "$tmp/redpie" "$here/redpie.c" $(pkg-config --cflags --libs libdpdk) -lm
log "built $tmp/redpie; running $count x $iters iterations per benchmark"

args=(-count "$count" -iters "$iters" -prefix "$prefix")
[ -n "$run" ] && args+=(-run "$run")
[ -n "$cpu" ] && args+=(-cpu "$cpu")
[ -n "$verbose" ] && args+=(-v)
[ -n "$variants" ] && args+=(-variants "$variants")
"$tmp/redpie" "${args[@]}"
