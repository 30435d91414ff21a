# Sourced by bench/prepare.sh and bench/gpu.sh. bench/gen's programs carry the runtime of the
# tpace that translated them, and an older runtime quietly ignores newer settings (such as
# TPACE_BENCH_PLANS or TPACE_MACHINE). prepare.sh lists what bench/gen is translated from in
# bench/gen/sources.list (the files git keeps or would keep under src, examples, tests/fixtures
# and bench/opencl: those the device tool copies) and their digest in bench/gen/sources.sum;
# gpu.sh digests the same files of its own checkout and says when the two differ.

# The files bench/gen is translated from, one a line.
sources_list() {
    git ls-files --cached --others --exclude-standard -- src examples tests/fixtures bench/opencl 2>/dev/null |
        LC_ALL=C sort
}

# A short digest of the files listed in $1 (a missing file counts as empty, and differs).
sources_sum() {
    local f
    while IFS= read -r f; do
        printf '%s\n' "$f"
        cat -- "$f" 2>/dev/null
    done <"$1" | sha256sum | cut -c1-16
}
