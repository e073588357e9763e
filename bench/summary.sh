#!/bin/sh
# bench/summary.sh FILE — prints the rows the benchmarks of one `make bench`
# appended to FILE (bench_common.h: bench_summary_row) as one table, with
# the machine and the load average now.  Each ratio is the median over
# paired rounds (the work and its reference interleaved in one process);
# rows of one measurement (peak memory against the files) have 1 round, rows
# with no target ("info") a target of -, a refused load no value.
f=${1:?usage: bench/summary.sh FILE}
[ -s "$f" ] || { echo "bench summary: no rows in $f"; exit 0; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(getconf _NPROCESSORS_ONLN)
echo
echo "make bench summary — $cpu, $cores cores, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F '\t' '
	BEGIN { printf "  %-62s %8s %15s %6s %9s %-7s %5s\n", "row", "median", "min..max", "rounds", "target", "verdict", "load" }
	{
		v = $4 > 0 ? sprintf("%7.3fx", $2) : "-"
		r = $4 > 0 ? $3 : "-"
		t = $5 == "-" ? "-" : $5 "x"
		printf "  %-62s %8s %15s %6d %9s %-7s %5.2f\n", $1, v, r, $4, t, $6, $7
	}
' "$f"
