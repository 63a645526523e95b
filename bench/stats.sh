# Statistics shared by the benchmarks (sourced by scripts/bench.sh, bench/flood.sh and
# bench/instructions.sh).

# The median of numbers (one per line or separated by spaces).
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# A 95% interval of the rounds' median ratio, free of any assumption on how rounds spread:
# [x(k), x(n+1-k)] of the sorted rounds, k the largest with 2 P(Bin(n, 1/2) < k) <= 0.05
# (the sign test); none with fewer than 6 rounds.
interval() {
    tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END {
        n = NR; p = 0.5 ^ n; c = p; k = 0
        for (j = 0; j < n && 2 * c <= 0.05; j++) { k = j + 1; p = p * (n - j) / (j + 1); c += p }
        if (k == 0) print "none (fewer than 6 rounds)"; else printf "%.3f - %.3f\n", a[k], a[n + 1 - k] }'
}
