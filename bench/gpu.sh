#!/usr/bin/env bash
# Run on the GPU machine (see bench/prepare.sh). Builds every prepared example
# with nvcc, checks it bit for bit against the sequential program on the CPU
# for every schedule, then times Jacobi-2D and heat-3D on large grids: in-core,
# and out-of-core under a TPACE_DEVICE_MEM budget with naive, mm and mmtb over k.
# Prints a table last; logs go to $OUT (or /tmp/tpace-bench).
# BENCH_PARTS picks what runs: check, jacobi, heat, huge (default: check jacobi heat).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tpace-bench}
mkdir -p "$out"
work=/tmp/tpace-work
mkdir -p "$work"
parts=${BENCH_PARTS:-check jacobi heat}
nvflags="-O3 -arch=sm_90 --fmad=false -Xcompiler -O3,-mcmodel=medium"
table="$out/table.txt"
: >"$table"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)" | tee -a "$table"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$table"
nvcc --version | tail -1 | tee -a "$table"

row() { # name schedule k b streams chunks steps seconds glups note
    printf '%-34s %-7s %5s %8s %3s %6s %5s %9s %9s  %s\n' "$@" | tee -a "$table"
}
field() { # key line
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

# ---- 1. correctness: every example and schedule against the CPU original ----
if [[ $parts == *check* ]]; then
    echo "== correctness (bit for bit, 13 steps) ==" | tee -a "$table"
    for dir in bench/gen/*/; do
        name=$(basename "$dir")
        gcc -O2 -std=gnu11 -Wno-unknown-pragmas "$dir/reference.c" -o "$work/$name.ref" -lm || { echo "$name: reference build failed" | tee -a "$table"; continue; }
        nvcc $nvflags -Werror all-warnings -x cu "$dir/translated.cpp" -o "$work/$name.gpu" 2>"$out/$name.nvcc.txt" \
            || { echo "$name: nvcc failed: $(head -3 "$out/$name.nvcc.txt")" | tee -a "$table"; continue; }
        rm -f "$work/ref.dump"
        TPACE_DUMP="$work/ref.dump" "$work/$name.ref" 13 >"$work/ref.out" 2>/dev/null
        for cfg in "mmtb 3 7 3" "mmtb 5 1 2" "mmtb 13 11 4" "mmtb 4 1000000 2" "mm 3 7 2" "mm 5 2 3" "naive 1 9 2" "incore 1 1 1"; do
            read -r s k b n <<<"$cfg"
            rm -f "$work/gpu.dump"
            line=$(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=$n TPACE_DUMP="$work/gpu.dump" \
                "$work/$name.gpu" 13 2>&1 >"$work/gpu.out" | grep '^tpace: ' | tail -1)
            if cmp -s "$work/ref.dump" "$work/gpu.dump" && cmp -s "$work/ref.out" "$work/gpu.out"; then verdict=identical; else verdict=DIFFERENT; fi
            row "$name" "$s" "$(field k "$line")" "$(field b "$line")" "$n" "$(field chunks "$line")" 13 \
                "$(field seconds "$line")" "$(field glups "$line")" "$verdict"
        done
    done
fi

# ---- 2. performance on large grids ----
# run NAME BINARY STEPS [ENV...]: one timed run, one table row.
run() {
    local name=$1 bin=$2 steps=$3
    shift 3
    local line
    line=$(env "$@" "$bin" "$steps" 2>&1 >"$out/$name.stdout" | tee "$out/$name.stderr" | grep '^tpace: ' | tail -1)
    if [[ -z $line ]]; then
        row "$name" "?" "" "" "" "" "$steps" "" "" "FAILED: $(tail -1 "$out/$name.stderr")"
        return
    fi
    row "$name" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
        "$(field chunks "$line")" "$steps" "$(field seconds "$line")" "$(field glups "$line")" "$*"
}

perf() { # label binary steps budget "mmtb k list" "mm k list"
    local label=$1 bin=$2 steps=$3 budget=$4
    run "$label incore" "$bin" "$steps" TPACE_SCHEDULE=incore
    for k in $5; do
        run "$label mmtb" "$bin" "$steps" TPACE_SCHEDULE=mmtb TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget
    done
    for k in $6; do
        run "$label mm" "$bin" "$steps" TPACE_SCHEDULE=mm TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget
    done
    run "$label naive" "$bin" 2 TPACE_SCHEDULE=naive TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget
    run "$label default" "$bin" "$steps" TPACE_DEVICE_MEM=$budget
}

if [[ $parts == *profile* ]]; then
    echo "== profile: Jacobi-2D 16384 x 16384 in-core, the sweep kernel under ncu ==" | tee -a "$table"
    nvcc $nvflags -DX=16384 -DY=16384 -x cu bench/gen/jacobi2d/translated.cpp -o "$work/jacobi.mid"
    nvcc $nvflags -DNX=512 -DNY=512 -DNZ=512 -x cu bench/gen/heat3d/translated.cpp -o "$work/heat.mid"
    run "jacobi2d 16384x16384" "$work/jacobi.mid" 200 TPACE_SCHEDULE=incore
    run "heat3d 512^3" "$work/heat.mid" 200 TPACE_SCHEDULE=incore
    TPACE_SCHEDULE=incore ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
        -k regex:tpace_sweep --launch-skip 4 --launch-count 1 "$work/jacobi.mid" 10 >"$out/ncu-jacobi.txt" 2>&1
    grep -E "DRAM Throughput|Memory Throughput|Compute \(SM\)|Duration|Registers Per|Achieved Occupancy|Block Size|Grid Size" "$out/ncu-jacobi.txt" | tee -a "$table"
    TPACE_SCHEDULE=incore ncu --clock-control none --section SpeedOfLight \
        -k regex:tpace_sweep --launch-skip 4 --launch-count 1 "$work/heat.mid" 10 >"$out/ncu-heat.txt" 2>&1
    grep -E "DRAM Throughput|Memory Throughput|Compute \(SM\)|Duration" "$out/ncu-heat.txt" | tee -a "$table"
fi
if [[ $parts == *jacobi* ]]; then
    echo "== Jacobi-2D float, 49152 x 61440 (2 arrays, 24.2 GB), budget 8G ==" | tee -a "$table"
    nvcc $nvflags -DX=49152 -DY=61440 -x cu bench/gen/jacobi2d/translated.cpp -o "$work/jacobi.big"
    perf "jacobi2d 49152x61440" "$work/jacobi.big" ${JACOBI_STEPS:-128} 8G "16 32 64" "8 16 32"
fi
if [[ $parts == *heat* ]]; then
    echo "== heat-3D float, 1152 x 1536 x 1728 (2 arrays, 24.5 GB), budget 8G ==" | tee -a "$table"
    nvcc $nvflags -DNX=1152 -DNY=1536 -DNZ=1728 -x cu bench/gen/heat3d/translated.cpp -o "$work/heat.big"
    perf "heat3d 1152x1536x1728" "$work/heat.big" ${HEAT_STEPS:-128} 8G "8 16 32" "4 8 16"
fi
if [[ $parts == *huge* ]]; then
    echo "== Jacobi-2D float, 86016 x 122880 (2 arrays, 84.6 GB > the GPU's 80 GB), no budget set ==" | tee -a "$table"
    nvcc $nvflags -DX=86016 -DY=122880 -x cu bench/gen/jacobi2d/translated.cpp -o "$work/jacobi.huge"
    run "jacobi2d 86016x122880 default" "$work/jacobi.huge" ${HUGE_STEPS:-128} TPACE_K=64
fi
echo "== table =="
cat "$table"
