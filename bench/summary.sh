#!/bin/sh
# bench/summary.sh FILE — prints the rows the benchmarks of one `make bench`
# appended to FILE (bench_common.h: bench_summary_row) as one table, with
# the machine and the load average now.  Each ratio is the median over
# paired rounds (the work and its reference interleaved in one process).
f=${1:?usage: bench/summary.sh FILE}
[ -s "$f" ] || { echo "bench summary: no rows in $f"; exit 0; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(getconf _NPROCESSORS_ONLN)
echo
echo "make bench summary — $cpu, $cores cores, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F '\t' '
	BEGIN { printf "  %-44s %8s %15s %6s %9s %-7s %5s\n", "row", "median", "min..max", "rounds", "target", "verdict", "load" }
	{ printf "  %-44s %7.3fx %15s %6d %8sx %-7s %5.2f\n", $1, $2, $3, $4, $5, $6, $7 }
' "$f"
