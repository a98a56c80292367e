# check_on_gpu.sh's perf-compare.tsv from its perf.txt (awk -F' - ' -f perf_table.awk perf.txt): one row per
# test-backend-ops perf case, the microseconds per op of each run (named by its '### perf NAME:' line; a run
# repeated over rounds gives its median), then stock/kdn and, with the PDL-off runs, stock/kdn_nopdl
# (ggml's time over libkdn's: above 1 libkdn is faster), then the lower and upper quartiles of the per-round
# stock/kdn (round k pairs the k-th run of each): how far the ratio moves from one process to the next.
    /^### perf / { split($0, w, " "); run = w[3]; sub(/:$/, "", run)
                   if (!(run in known)) { known[run] = 1; runs[++nr] = run }; next }
    # a case's name; with CUDA graphs on, ggml's warm-up notice follows it and its numbers take the next line
    /^ *[A-Z][A-Z_0-9]*\(.*\): / { name = $0; sub(/^ */, "", name); sub(/: .*/, "", name) }
    / us\/run/ { us = $2; sub(/ *us\/run.*/, "", us); gsub(/ /, "", us)
                 k = ++cnt[name, run]; v[name, run, k] = us + 0
                 if (!(name in seen)) { seen[name] = 1; order[++n] = name } }
    function sort(a, m,    i, j, x) {
        for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
    function median(c, r,    m, i, a) {
        m = cnt[c, r]; if (!m) return 0
        for (i = 1; i <= m; i++) a[i] = v[c, r, i]
        sort(a, m)
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    # the quartiles of stock/kdn over the rounds that ran both: "q1\tq3"
    function round_quartiles(c,    m, k, a, q) {
        m = 0
        for (k = 1; k <= cnt[c, "kdn"] && k <= cnt[c, "stock"]; k++)
            if (v[c, "kdn", k] > 0 && v[c, "stock", k] > 0) a[++m] = v[c, "stock", k] / v[c, "kdn", k]
        if (!m) return "-\t-"
        sort(a, m); q = int((m + 3) / 4)
        return sprintf("%.2f\t%.2f", a[q], a[m - q + 1]) }
    function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "-" }
    END { for (j = 1; j <= n; j++) for (i = 1; i <= nr; i++) t[order[j], runs[i]] = median(order[j], runs[i])
          printf "case"; for (i = 1; i <= nr; i++) printf "\t%s_us", runs[i]
          printf "\tstock/kdn"; if (nr > 2) printf "\tstock/kdn_nopdl"; printf "\tstock/kdn_q1\tstock/kdn_q3\n"
          for (j = 1; j <= n; j++) { c = order[j]; printf "%s", c
              for (i = 1; i <= nr; i++) printf "\t%s", t[c, runs[i]]
              printf "\t%s", ratio(t[c, "stock"], t[c, "kdn"])
              if (nr > 2) printf "\t%s", ratio(t[c, "stock-nopdl"], t[c, "kdn-nopdl"])
              printf "\t%s\n", round_quartiles(c) } }
