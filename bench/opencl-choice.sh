#!/usr/bin/env bash
# The OpenCL work group and T that tpace chooses now, against sweeps measured before: for each
# `tpace tune --target opencl` folder (bench/gpu.sh part `opencl` writes tune-cl-NAME/ with
# results.csv, the sweep, and args, the source and settings it was tuned at; they come back in
# $OUT/tune-cl.tar.gz), asks `tpace plan --target opencl` for its choice at those settings on the
# profile (MACHINE, default h100), finds that work group and T among the sweep's runs and prints
# its kernel time over the sweep's best: what a change to the model's pricing would have reached
# on the recorded GPU, without a GPU.
#   bash bench/opencl-choice.sh DIR_OR_TARBALL...   (folders holding tune-cl-*/, or tarballs of them)
# TPACE: the tpace binary (default target/release/tpace, else bench/gen/tpace).
# Prints one line per benchmark and a mean; exit 1 when a folder has no results.csv or args.
set -uo pipefail
cd "$(dirname "$0")/.."
tpace=${TPACE:-target/release/tpace}
[[ -x $tpace ]] || tpace=bench/gen/tpace
machine=${MACHINE:-h100}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dirs=()
for a in "$@"; do
    if [[ -f $a ]]; then
        mkdir -p "$scratch/$(basename "$a")"
        tar -C "$scratch/$(basename "$a")" -xzf "$a" || { echo "opencl-choice.sh: cannot read $a" >&2; exit 1; }
        a=$scratch/$(basename "$a")
    fi
    for d in "$a"/tune-cl-*/; do [[ -d $d ]] && dirs+=("${d%/}"); done
done
[[ ${#dirs[@]} -gt 0 ]] || { echo "opencl-choice.sh: no tune-cl-*/ folder in $*" >&2; exit 1; }
status=0
ratios=()
for d in "${dirs[@]}"; do
    name=${d##*/tune-cl-}
    if [[ ! -f $d/results.csv || ! -f $d/args ]]; then
        echo "$name: no results.csv or args in $d" >&2
        status=1
        continue
    fi
    read -r -a args <"$d/args" # SOURCE STEPS --set NAME=VALUE ...
    started=$(date +%s%N)
    chosen=$("$tpace" plan "${args[0]}" --target opencl --machine "$machine" --steps "${args[1]}" "${args[@]:2}" 2>&1 |
        sed -n 's/^chosen: work group \([0-9x]*\) (x, y, z), T = \([0-9]*\).*/\1 \2/p')
    took=$((($(date +%s%N) - started) / 1000000))
    if [[ -z $chosen ]]; then
        echo "$name: tpace plan gave no choice for ${args[*]}" >&2
        status=1
        continue
    fi
    read -r wg t <<<"$chosen"
    # The kernel time of each run that ran (column 10; the loop's, column 9, where none).
    line=$(awk -F, -v wg="$wg" -v t="$t" 'NR > 1 && $12 == "ok" {
            s = ($10 != "" ? $10 : $9) + 0
            if (s <= 0) next
            n++
            if (best == 0 || s < best) { best = s; bw = $1; bt = $2 }
            if ($1 == wg && $2 == t && (mine == 0 || s < mine)) mine = s
        }
        END {
            if (n == 0) { print "no run of the sweep ran"; exit }
            if (mine == 0) printf "not among the sweep'"'"'s %d runs that ran (best %s T=%s, %.6f s)", n, bw, bt, best
            else printf "%.3f of the best (%.6f s against %s T=%s, %.6f s; %d runs)", best / mine, mine, bw, bt, best, n
        }' "$d/results.csv")
    echo "OpenCL $name: $machine's choice now $wg T=$t (tpace plan, ${took} ms with start-up): $line"
    r=$(sed -n 's/^\([0-9.]*\) of the best.*/\1/p' <<<"$line")
    [[ -n $r ]] && ratios+=("$r")
done
if [[ ${#ratios[@]} -gt 0 ]]; then
    printf '%s\n' "${ratios[@]}" | awk '{ s += $1; if (min == "" || $1 < min) min = $1; n++ }
        END { printf "OpenCL: the choice now over %d recorded sweeps: mean %.3f, lowest %.3f (target >= 0.90 each)\n", n, s / n, min }'
fi
exit $status
