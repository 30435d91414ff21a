#!/usr/bin/env bash
# How fast `tpace plan` answers on large grids, release build, on this machine (no GPU
# needed). The tests bound the search's work (plans predicted); its speed is measured
# here. For each case: the fastest and the median of RUNS runs of the whole process
# (start-up included), the search's own time as the report's `model:` line gives it,
# and how many plans it predicted. Goal (issue 24): under 100 ms for the large searches.
#   bash bench/plan-speed.sh            # RUNS=11 by default
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
tpace=target/release/tpace
runs=${RUNS:-11}

cases=(
    "jacobi2d 48000^2 2048 steps 8GB|plan examples/jacobi2d.c --machine h100 --set X=48000 --set Y=48000 --steps 2048 --mem-cap 8GB"
    "jacobi2d 49152x61440 128 cuda 8G|plan examples/jacobi2d.c --target cuda --machine h100 --set X=49152 --set Y=61440 --steps 128 --mem-cap 8G"
    "heat3d 100000x1000x1000 10000|plan examples/heat3d.c --set NX=100000 --set NY=1000 --set NZ=1000 --steps 10000"
    "heat3d 1152x1536x1728 128 cuda 8G|plan examples/heat3d.c --target cuda --machine h100 --set NX=1152 --set NY=1536 --set NZ=1728 --steps 128 --mem-cap 8G"
)

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "tpace: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+changes'), release build, $runs runs each"
printf '%-36s %10s %10s %10s %10s\n' case "best ms" "median ms" "model ms" plans
for c in "${cases[@]}"; do
    name=${c%%|*}
    read -r -a args <<<"${c#*|}"
    times=()
    model=""
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s%N)
        report=$("$tpace" "${args[@]}")
        t1=$(date +%s%N)
        times+=($(((t1 - t0) / 1000)))
        model=$(grep '^model: ' <<<"$report")
    done
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    best=${sorted[0]}
    median=${sorted[$((runs / 2))]}
    # model: N plans predicted, M too big for the cap, in X ms
    plans=$(awk '{print $2 + $5}' <<<"$model")
    model_ms=$(sed -n 's/.* in \([0-9.]*\) ms.*/\1/p' <<<"$model")
    printf '%-36s %10s %10s %10s %10s\n' "$name" "$(awk -v u="$best" 'BEGIN{printf "%.1f", u / 1000}')" \
        "$(awk -v u="$median" 'BEGIN{printf "%.1f", u / 1000}')" "$model_ms" "$plans"
done
