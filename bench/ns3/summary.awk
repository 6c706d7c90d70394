# summary.awk prints, per variant (column 1), the mean ± sample standard
# deviation of columns 3-16 of a redstudy or simside CSV:
#
#	awk -f bench/ns3/summary.awk bench/ns3/out/ns3.csv
BEGIN { FS = "," }
NR == 1 { for (i = 3; i <= 16; i++) name[i] = $i; next }
{
	v = $1
	if (!(v in n)) order[++nv] = v
	n[v]++
	for (i = 3; i <= 16; i++) { s[v, i] += $i; ss[v, i] += $i * $i }
}
END {
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
}
