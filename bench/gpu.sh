#!/usr/bin/env bash
# Run on the GPU machine (see bench/prepare.sh). Builds every prepared example
# with nvcc and checks it against the sequential program on the CPU for every
# schedule and the model's default plan (arrays bit for bit, reductions and
# printed numbers within `tpace compare`'s tolerance); runs `tpace run` on every
# example; times Jacobi-2D, heat-3D, Himeno and CIP on large grids (in-core, and
# out-of-core under a TPACE_DEVICE_MEM budget with naive, mm and mmtb over k);
# and runs `tpace tune` sweeps against the model's pick.
# Prints a table last; logs go to $OUT (or /tmp/tpace-bench).
# check: CHECK_ONLY="a b" only those programs; CHECK_STEPS="13 12" at those step counts
# (default 13; the pointer-rotating fixtures of tests/fixtures/sweeps want an even one too).
# BENCH_PARTS picks what runs: check, run, jacobi, heat, depth, huge, beyond, himeno, cip, tune,
# fast, profile, probe, ab, mpi, opencl, managed, openacc-gpu, streams, close, plans, cc, codes, sweep27, showit,
# kernels3d, march, tiles3d, links
# (default: check run himeno cip).
# links (issue 25): every GPU of the node copying to and from page-locked host memory at once
# (bench/links/host_links.cu), 1 to N GPUs, each way and both: the host's memory, shared by the
# GPUs, bounds what N GPUs can gain on a pipeline that moves the grid in and out.
# cc: tests/fixtures/cc built by its Makefile with CC='tpace cc --target cuda' against CC=gcc (issue 26).
# codes: issue 26's hotspot3D and Parboil fixtures against the CPU on a medium grid, then timed on 512^3.
# kernels3d: issue 28, tpace's 3-D kernels beside hand-written ones (bench/peer), ratios to march.
# tiles3d: the fused 3-D tiles aligned against unaligned and against march, heat-3D float and double.
# march: the one-step 3-D kernel's planes loaded ahead, unrolling and first column over a few settings, against march.
# plans: the model's plans against their runner-ups on the 8G grids and beyond the GPU's memory.
# close: issue 19's remaining ratios (heat-3D against naive, Himeno and CIP plans) and heat-3D's fused kernel under ncu.
# streams: the model's plan against 2/3/4 streams and narrower chunks, traced (issue 19).
# depth: the fused kernels at every step count per kernel, in-core, kernels timed by the trace
# (also at the end of the parts jacobi and heat).
# probe: `tpace probe --into` a copy of the bundled profile of the device it runs on
# (profiles/h100.toml on an H100, h200.toml on an H200), written to $OUT/NAME.toml (the
# device's figures and the [[kernels]] table refreshed, the rest kept; about 3 to 4
# minutes): copy it over profiles/NAME.toml to refresh the bundled profile. Parts after it
# in the same call plan with the fresh file (TPACE_MACHINE).
# sweep27 (issue 27 item 2): for Jacobi-2D, heat-3D, Himeno ELARGE and CIP-2D at the grids and
# budgets of RESULTS.md and without a budget, the model's plan against its runner-ups and a
# coarse sweep (k 32/64/128 x three widths x 2/3/4 streams), each case one process
# (TPACE_BENCH_PLANS: the set-up once), predicted against measured.
# showit (issue 27 item 3): the run with the device's own profile against the run with the other
# GPU's (the spec-sheet h200 on an H100, h100 on an H200), without and with re-planning.
# TRACE=1 records every timed run's timeline (TPACE_TRACE) under $OUT/traces.
# opencl (issue 16): every example's OpenCL translation on NVIDIA's OpenCL, and the
# stencil-directives paper's benchmarks tuned there (see its comment below).
# managed: a CUDA managed-memory Jacobi-2D (bench/managed) against tpace on the same
# grids, fitting in the GPU's memory and beyond it. openacc-gpu: the OpenACC output
# built by gcc 12 with nvptx offloading (bench/offload; carry bench/offload/carry too).
set -uo pipefail
cd "$(dirname "$0")/.."
# $OUT gets the table and the tune folders; every other log goes to $work/logs.
res=${OUT:-/tmp/tpace-bench}
work=${BENCH_WORK:-/tmp/tpace-work} # builds and logs; BENCH_WORK: another folder (bench/dry-run.sh: one of its own)
out=$work/logs
mkdir -p "$res" "$work" "$out"
parts=${BENCH_PARTS:-check run himeno cip}
tpace=bench/gen/tpace
# NVFLAGS_EXTRA: more nvcc options for every tpace build (e.g. -DTPACE_TILE_FAST=1 to check a switch).
nvflags="-O3 -arch=sm_90 --fmad=false -Xcompiler -O3,-mcmodel=medium${NVFLAGS_EXTRA:+ $NVFLAGS_EXTRA}"
table="$res/table.txt"
: >"$table"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)" | tee -a "$table"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$table"
# The clocks, power and temperature at the start (read only): kernels bound by issue follow the SM clock.
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv | tr '\n' ' ' | sed 's/ $/\n/' | tee -a "$table"
nvcc --version | tail -1 | tee -a "$table"
echo "tpace builds: nvcc $nvflags" | tee -a "$table"
# bench/gen's programs carry the runtime of the tpace that translated them: say when that was
# not this checkout's (bench/sources.sh), since an older runtime ignores newer settings.
. bench/sources.sh
gen_sum=$(cat bench/gen/sources.sum 2>/dev/null)
here_sum=$([[ -f bench/gen/sources.list ]] && sources_sum bench/gen/sources.list)
if [[ -z $gen_sum || $gen_sum != "$here_sum" ]]; then
    echo "STALE bench/gen: translated from sources ${gen_sum:-older than bench/gen/sources.sum}, this checkout's are ${here_sum:-unknown}: its programs may ignore newer runtime settings (TPACE_BENCH_PLANS, TPACE_MACHINE); run bash bench/prepare.sh and carry bench/gen again" | tee -a "$table"
fi

# cuda_sources DIR: nvcc's input files for a prepared translation: the kernels' .cu
# and the host program's .c (a translation from before the split is one .cu text).
cuda_sources() {
    if [[ -f $1/translated.cu ]]; then
        echo "$1/translated.cu $1/translated.host.c"
    else
        echo "-x cu $1/translated.cpp"
    fi
}

# flags_of DIR: the -D options a prepared fixture needs (bench/gen/NAME/flags), or none.
flags_of() {
    cat "$1/flags" 2>/dev/null || true
}

row() { # name schedule k b streams chunks fuse steps seconds glups note
    printf '%-34s %-7s %5s %8s %3s %6s %4s %5s %9s %9s  %s\n' "$@" | tee -a "$table"
}
row "name" "sched" "k" "b" "S" "chunks" "fuse" "steps" "seconds" "Glup/s" "note"
field() { # key line
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

# ---- 1. correctness: every example and schedule against the CPU original ----
if [[ $parts == *check* ]]; then
    # CHECK_STEPS="13 12": each program at these step counts (a pointer rotation's result
    # depends on the count's parity; tests/fixtures/sweeps).
    check_steps=${CHECK_STEPS:-13}
    echo "== correctness (bit for bit, $check_steps steps) ==" | tee -a "$table"
    # Build everything at once (the machine has many cores), then check one by one.
    rm -f "$work"/*.ref "$work"/*.gpu
    for dir in bench/gen/*/; do
        name=$(basename "$dir")
        [[ $name == ab-* || $name == mpi-* ]] && continue # for the parts `ab` and `mpi`
        # CHECK_ONLY="jacobi2d heat3d": only those programs (a short call).
        [[ -n ${CHECK_ONLY:-} && " $CHECK_ONLY " != *" $name "* ]] && continue
        # bench/gen/NAME/flags: a fixture's -D options (bench/prepare.sh).
        gcc -O2 -std=gnu11 -Wno-unknown-pragmas $(flags_of "$dir") "$dir/reference.c" -o "$work/$name.ref" -lm 2>"$out/$name.gcc.txt" &
        nvcc $nvflags -Werror all-warnings $(flags_of "$dir") $(cuda_sources "$dir") -o "$work/$name.gpu" 2>"$out/$name.nvcc.txt" &
    done
    wait
    for dir in bench/gen/*/; do
        name=$(basename "$dir")
        [[ $name == ab-* || $name == mpi-* ]] && continue
        [[ -n ${CHECK_ONLY:-} && " $CHECK_ONLY " != *" $name "* ]] && continue
        [[ -x $work/$name.ref ]] || { echo "$name: reference build failed: $(head -3 "$out/$name.gcc.txt")" | tee -a "$table"; continue; }
        [[ -x $work/$name.gpu ]] || { echo "$name: nvcc failed: $(head -3 "$out/$name.nvcc.txt")" | tee -a "$table"; continue; }
        for steps in $check_steps; do
        rm -f "$work/ref.dump"
        TPACE_DUMP="$work/ref.dump" "$work/$name.ref" "$steps" >"$work/ref.out" 2>/dev/null
        # Fused kernels (Jacobi-2D, heat-3D): k=13 and 4 group 4 (2-D) or 2 (3-D) steps, k=5
        # and 9 leave single steps after the groups, b=1 runs mmtb unfused, fuse 3 and 2 by hand.
        # Deeper fused kernels (to 8 steps; heat-3D in double to 7) by hand: mmtb with k=13 in
        # 8s, 7s and 5s (a group and single steps), mm, in-core; a program whose kernels stop
        # below the count refuses it in words (the row says so).
        for cfg in "mmtb 3 7 3" "mmtb 5 1 2" "mmtb 13 11 4" "mmtb 4 1000000 2" "mmtb 9 5 3 3" "mm 3 7 2" "mm 5 2 3" "mm 6 9 2 2" "naive 1 9 2" "incore 1 1 1" "model - - -" \
            "mmtb 13 11 3 8" "mmtb 13 9 2 7" "mmtb 13 7 2 5" "mm 9 11 2 6" "incore 1 1 1 8" "incore 1 1 1 4"; do
            read -r s k b n f <<<"$cfg"
            rm -f "$work/gpu.dump"
            if [[ $s == model ]]; then set_env=(); else set_env=(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=$n); fi
            [[ -n $f ]] && set_env+=(TPACE_FUSE=$f)
            line=$(env "${set_env[@]}" TPACE_DUMP="$work/gpu.dump" \
                "$work/$name.gpu" "$steps" 2>&1 >"$work/gpu.out" | tee "$out/$name.gpu.stderr" | grep '^tpace: ' | tail -1)
            if [[ -n $f ]] && grep -q "TPACE_FUSE=$f: this program has fused kernels for at most" <<<"$line"; then
                verdict="refused as it should be: $(sed 's/.*\(fused kernels for at most [0-9]* steps\).*/\1/' <<<"$line")"
            elif verdict=$("$tpace" compare "$work/ref.dump" "$work/gpu.dump" --stdout "$work/ref.out" "$work/gpu.out"); then
                if grep -q "within tolerance" <<<"$verdict"; then verdict="identical arrays, reductions within tolerance"; else verdict=identical; fi
            else
                verdict="DIFFERENT: $(tr '\n' ' ' <<<"$verdict")"
                [[ -f $work/gpu.dump ]] || verdict="FAILED: $(tail -3 "$out/$name.gpu.stderr" | tr '\n' ' ' | cut -c1-400)"
            fi
            row "$name" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                "$(field chunks "$line")" "$(field fuse "$line")" "$steps" "$(field seconds "$line")" "$(field glups "$line")" "$verdict"
        done
        done
    done
fi

# ---- 1b. `tpace run --target cuda` itself, on every example, default plan ----
if [[ $parts == *run* ]]; then
    echo "== tpace run --target cuda (nvcc, the GPU), default plan, 13 steps ==" | tee -a "$table"
    for f in examples/*.c; do
        "$tpace" run "$f" --target cuda -- 13 >"$out/run-$(basename "$f" .c).txt" 2>&1
        rc=$? # before any other command substitution resets $?
        echo "$(basename "$f"): exit $rc $(tail -2 "$out/run-$(basename "$f" .c).txt" | tr '\n' ' ')" | tee -a "$table"
    done
fi

# ---- 1c. `tpace cc`: a project's own Makefile with CC='tpace cc --target cuda' (issue 26) ----
# tests/fixtures/cc (main.c plain C; heat.c and cool.c each a time loop) built by its
# Makefile with CC=gcc and with tpace cc (nvcc, -arch=native on the GPU; CC_EMULATE=1:
# the CPU emulation, for dry-run.sh), run at 1, 7 and 13 steps under several plans:
# the printed hash and values must be the gcc build's, and both loops must report.
if [[ " $parts " == *" cc "* ]]; then
    echo "== tpace cc: make CC='tpace cc --target cuda' against make CC=gcc ==" | tee -a "$table"
    if ! command -v make >/dev/null 2>&1; then
        echo "cc: FAILED: make not found on this machine" | tee -a "$table"
    else
        emulate=""
        [[ ${CC_EMULATE:-0} == 1 ]] && emulate="--emulate"
        rm -rf "$work/cc-gcc" "$work/cc-cuda"
        cp -r tests/fixtures/cc "$work/cc-gcc" && cp -r tests/fixtures/cc "$work/cc-cuda"
        make -C "$work/cc-gcc" CC=gcc >"$out/cc-gcc.txt" 2>&1
        if ! make -C "$work/cc-cuda" CC="$PWD/$tpace cc --target cuda $emulate" >"$out/cc-cuda.txt" 2>&1; then
            echo "cc: FAILED: the build with tpace cc: $(grep -m3 -i error "$out/cc-cuda.txt" | tr '\n' ' ' | cut -c1-300)" | tee -a "$table"
        else
            warned=$(grep -ci warning "$out/cc-cuda.txt" || true)
            echo "cc: make CC='tpace cc --target cuda $emulate' built heat ($warned warning lines)" | tee -a "$table"
            for steps in 1 7 13; do
                "$work/cc-gcc/heat" "$steps" >"$work/cc-ref.out" 2>/dev/null
                for cfg in "mmtb 3 7 3" "mmtb 13 11 2" "mm 4 9 2" "naive 1 9 2" "incore 1 1 1" "model - - -"; do
                    read -r s k b n <<<"$cfg"
                    if [[ $s == model ]]; then set_env=(); else set_env=(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=$n); fi
                    env "${set_env[@]}" "$work/cc-cuda/heat" "$steps" >"$work/cc-gpu.out" 2>"$out/cc-gpu.stderr"
                    rc=$?
                    reports=$(grep -c '^tpace: .*schedule=' "$out/cc-gpu.stderr")
                    line=$(grep '^tpace: .*schedule=' "$out/cc-gpu.stderr" | tail -1)
                    if [[ $rc != 0 || $reports != 2 ]]; then
                        verdict="FAILED: exit $rc, $reports reports: $(tail -2 "$out/cc-gpu.stderr" | tr '\n' ' ' | cut -c1-300)"
                    elif cmp -s "$work/cc-ref.out" "$work/cc-gpu.out"; then
                        verdict="identical (both loops, printed hash and values)"
                    else
                        verdict="DIFFERENT: $(head -1 "$work/cc-gpu.out") against $(head -1 "$work/cc-ref.out")"
                    fi
                    row "cc-make" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                        "$(field chunks "$line")" "$(field fuse "$line")" "$steps" "$(field seconds "$line")" "$(field glups "$line")" "$verdict"
                done
            done
        fi
    fi
fi

# ---- 2. performance on large grids ----
# run NAME BINARY STEPS [ENV...]: one timed run, one table row. With TRACE=1 every run
# also writes its timeline (TPACE_TRACE) to $OUT/traces/N-NAME.tsv, and the table gets
# the trace's summary under the row (busy times of kernels, uploads, downloads).
runs=0
run() {
    local name=$1 bin=$2 steps=$3
    shift 3
    local line trace=()
    runs=$((runs + 1))
    if [[ ${TRACE:-0} == 1 ]]; then
        mkdir -p "$res/traces"
        trace=(TPACE_TRACE="$res/traces/$runs-${name//[^A-Za-z0-9._-]/-}.tsv") # plain names: the device brings back no file with = in its name
    fi
    # run_timeout (seconds), when a part sets it, stops a run that takes longer.
    line=$(env "$@" "${trace[@]}" ${run_timeout:+timeout "$run_timeout"} "$bin" "$steps" 2>&1 >"$out/$name.stdout" |
        tee "$out/$name.stderr" | grep '^tpace: ' | grep -v ': trace: ' | tail -1)
    if [[ $line != *": schedule="* ]]; then
        # No report: a refusal (its words are the last tpace line) or a failure.
        row "$name" "?" "" "" "" "" "" "$steps" "" "" "FAILED${run_timeout:+ (or stopped after ${run_timeout} s)}: $(tail -1 "$out/$name.stderr" | cut -c1-300)"
        return
    fi
    row "$name" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
        "$(field chunks "$line")" "$(field fuse "$line")" "$steps" "$(field seconds "$line")" "$(field glups "$line")" "$*"
    if [[ ${TRACE:-0} == 1 ]]; then
        grep ': trace: ' "$out/$name.stderr" | sed 's/^tpace: [^ ]* trace: /    trace: /' | tee -a "$table"
    fi
}

perf() { # label binary steps budget "mmtb k list" "mm k list" [unfused mmtb k] [in-core fuse]
    # Fused kernels where the program has them (the default; in-core, TPACE_FUSE=$8 when
    # given), and with one step per kernel (TPACE_FUSE=1) in-core and for mmtb at one k,
    # to show what the two-level blocking buys.
    local label=$1 bin=$2 steps=$3 budget=$4
    run "$label incore" "$bin" "$steps" TPACE_SCHEDULE=incore ${8:+TPACE_FUSE=$8}
    run "$label incore" "$bin" "$steps" TPACE_SCHEDULE=incore TPACE_FUSE=1
    for k in $5; do
        run "$label mmtb" "$bin" "$steps" TPACE_SCHEDULE=mmtb TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget
    done
    if [[ -n ${7:-} ]]; then
        run "$label mmtb" "$bin" "$steps" TPACE_SCHEDULE=mmtb TPACE_K=$7 TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget TPACE_FUSE=1
    fi
    for k in $6; do
        run "$label mm" "$bin" "$steps" TPACE_SCHEDULE=mm TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget
    done
    # naive runs as many steps as the others (NAIVE_STEPS to shorten it): over a few steps
    # the last block's extra transfers (a folded temporary comes back) would weigh more.
    run "$label naive" "$bin" "${NAIVE_STEPS:-$steps}" TPACE_SCHEDULE=naive TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget
    run "$label default" "$bin" "$steps" TPACE_DEVICE_MEM=$budget
}

extra() { # label binary steps budget "schedule:k:chunk[:fuse[:streams]] ...": runs with the chunk width set too
    local label=$1 bin=$2 steps=$3 budget=$4 spec s k b f n
    for spec in $5; do
        IFS=: read -r s k b f n <<<"$spec"
        run "$label $s" "$bin" "$steps" TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=${n:-3} \
            TPACE_DEVICE_MEM=$budget ${f:+TPACE_FUSE=$f}
    done
}

# alts LABEL BINARY STEPS BUDGET FLOPS_PER_STEP "schedule:k:b:S[:fuse] ...": the model's plan, then
# each plan given (b "-": the model's width for that k and S; fuse absent: the model's), GFLOP/s
# rows where FLOPS_PER_STEP is not 0; BUDGET "-": none set (the device's free memory).
alts() {
    local label=$1 bin=$2 steps=$3 mem=$4 flops=$5 spec s k b n f
    local base=()
    [[ $mem != - ]] && base=(TPACE_DEVICE_MEM=$mem)
    if [[ $flops != 0 ]]; then gflops "$label model" "$bin" "$steps" "$flops" "${base[@]}"; else run "$label model" "$bin" "$steps" "${base[@]}"; fi
    for spec in $6; do
        IFS=: read -r s k b n f <<<"$spec"
        local env=("${base[@]}" TPACE_SCHEDULE=$s TPACE_K=$k TPACE_STREAMS=$n)
        [[ $b != - ]] && env+=(TPACE_CHUNK=$b)
        [[ -n $f ]] && env+=(TPACE_FUSE=$f)
        if [[ $flops != 0 ]]; then
            gflops "$label $s k$k b$b S$n${f:+ fuse$f}" "$bin" "$steps" "$flops" "${env[@]}"
        else
            run "$label $s k$k b$b S$n${f:+ fuse$f}" "$bin" "$steps" "${env[@]}"
        fi
    done
}

# depths LABEL BINARY STEPS MOST BYTES_PER_POINT POINTS: the fused kernels at every step count
# per kernel, 1 .. MOST (TPACE_FUSE), in-core, each run traced (TPACE_TRACE) for its kernels'
# busy time; one row per count, then a table: kernel seconds, kernel Glup/s and that over the
# single-step roofline (ROOF_GBS, default 2870 GB/s, the H100's device copy rate, over
# BYTES_PER_POINT read and written a point and step). The model's own in-core choice comes
# last (TPACE_FUSE unset).
depths() {
    local label=$1 bin=$2 steps=$3 most=$4 bpp=$5 points=$6 t trace line kern summary=()
    mkdir -p "$res/traces"
    for t in $(seq 1 "$most") model; do
        trace="$res/traces/depth-${label// /-}-$t.tsv"
        if [[ $t == model ]]; then
            run "$label incore model's depth" "$bin" "$steps" TPACE_SCHEDULE=incore TPACE_TRACE="$trace"
        else
            run "$label incore fuse $t" "$bin" "$steps" TPACE_SCHEDULE=incore TPACE_FUSE=$t TPACE_TRACE="$trace"
        fi
        line=$(grep ': trace: ' "$out/$label incore $([[ $t == model ]] && echo "model's depth" || echo "fuse $t").stderr" | tail -1)
        kern=$(sed -n 's/.*kernels ran \([0-9.]*\) s.*/\1/p' <<<"$line")
        summary+=("$t ${kern:-?}")
    done
    echo "  $label, in-core, $steps steps: kernels alone per step count (roofline: ${ROOF_GBS:-2870} GB/s / $bpp B a point and step)" | tee -a "$table"
    printf '  %-8s %10s %12s %10s\n' "fuse" "kernels s" "kernel Glup/s" "x roofline" | tee -a "$table"
    for line in "${summary[@]}"; do
        read -r t kern <<<"$line"
        awk -v t="$t" -v k="$kern" -v n="$steps" -v p="$points" -v roof="${ROOF_GBS:-2870}" -v bpp="$bpp" \
            'BEGIN { if (k + 0 > 0) { g = p * n / k / 1e9; printf "  %-8s %10.4f %12.1f %10.2f\n", t, k, g, g / (roof / bpp) }
                     else printf "  %-8s %10s %12s %10s\n", t, "?", "?", "?" }' | tee -a "$table"
    done
}

# gflops LABEL BINARY STEPS FLOPS_PER_STEP [ENV...]: one timed run, one row with GFLOP/s
# (the program's own flop count per step: flops per point times the points updated).
gflops() {
    local label=$1 bin=$2 steps=$3 per_step=$4
    shift 4
    run "$label" "$bin" "$steps" "$@"
    local secs
    secs=$(grep '^tpace: ' "$out/$label.stderr" | tail -1 | sed -n 's/.* seconds=\([^ ]*\).*/\1/p')
    [[ -n $secs ]] && awk -v f="$per_step" -v n="$steps" -v s="$secs" -v l="$label" \
        'BEGIN { printf "    %s: %.1f GFLOP/s\n", l, f * n / s / 1e9 }' | tee -a "$table"
}

if [[ $parts == *himeno* && ${HIMENO:-M XL} == *M* ]]; then
    # Himeno's own count: 34 flops per interior point, (MIMAX-3)(MJMAX-3)(MKMAX-3) of them.
    echo "== Himeno M (129 x 129 x 257, 15 arrays, 257 MB): in-core, default plan, and out-of-core under a 128M budget ==" | tee -a "$table"
    nvcc $nvflags -DMIDDLE $(cuda_sources bench/gen/himeno) -o "$work/himeno.m"
    hm=$((34 * 126 * 126 * 254))
    gflops "himeno M incore" "$work/himeno.m" 200 $hm TPACE_SCHEDULE=incore
    gflops "himeno M default" "$work/himeno.m" 200 $hm
    for k in 8 16 32; do
        gflops "himeno M mmtb k$k 128M" "$work/himeno.m" 200 $hm TPACE_SCHEDULE=mmtb TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=128M
    done
    gflops "himeno M default 128M" "$work/himeno.m" 200 $hm TPACE_DEVICE_MEM=128M
fi
if [[ $parts == *himeno* && ${HIMENO:-M XL} == *XL* ]]; then
    echo "== Himeno ELARGE (513 x 513 x 1025, 15 arrays, 16.2 GB), budget 4G ==" | tee -a "$table"
    nvcc $nvflags -DELARGE $(cuda_sources bench/gen/himeno) -o "$work/himeno.xl"
    hx=$((34 * 510 * 510 * 1022)) # Himeno's count, as for M
    st=${HIMENO_STEPS:-64}
    gflops "himeno XL incore" "$work/himeno.xl" "$st" $hx TPACE_SCHEDULE=incore
    for k in 8 16 32; do
        gflops "himeno XL mmtb k$k" "$work/himeno.xl" "$st" $hx TPACE_SCHEDULE=mmtb TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=4G
    done
    for k in 4 8; do
        gflops "himeno XL mm k$k" "$work/himeno.xl" "$st" $hx TPACE_SCHEDULE=mm TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=4G
    done
    gflops "himeno XL default 4G" "$work/himeno.xl" "$st" $hx TPACE_DEVICE_MEM=4G
fi
if [[ $parts == *cip* ]]; then
    # CIP: 97 flops per interior point (tpace check: 83 advection + 14 non-advection).
    echo "== CIP-2D float, 16384 x 16384 (8 arrays, 8.6 GB), budget 3G ==" | tee -a "$table"
    nvcc $nvflags -DNX=16384 -DNY=16384 $(cuda_sources bench/gen/cip2d) -o "$work/cip.big"
    cf=$((97 * 16382 * 16382))
    st=${CIP_STEPS:-64}
    gflops "cip2d incore" "$work/cip.big" "$st" $cf TPACE_SCHEDULE=incore
    for k in 8 16 32; do
        gflops "cip2d mmtb k$k" "$work/cip.big" "$st" $cf TPACE_SCHEDULE=mmtb TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=3G
    done
    for k in 4 8; do
        gflops "cip2d mm k$k" "$work/cip.big" "$st" $cf TPACE_SCHEDULE=mm TPACE_K=$k TPACE_STREAMS=3 TPACE_DEVICE_MEM=3G
    done
    gflops "cip2d default 3G" "$work/cip.big" "$st" $cf TPACE_DEVICE_MEM=3G
fi
if [[ $parts == *tune* ]]; then
    # Exhaustive sweeps against the model's pick (issue 5), out-of-core grids.
    tune() { # name source args...
        local name=$1 src=$2
        shift 2
        echo "== tpace tune $name: $* ==" | tee -a "$table"
        "$tpace" tune "$src" --target cuda --out "$res/tune-$name" "$@" >"$res/tune-$name.txt" 2>"$out/tune-$name.err"
        echo "exit $?" | tee -a "$table"
        tail -12 "$res/tune-$name.txt" | tee -a "$table"
    }
    [[ ${TUNE:-jacobi heat himeno} == *jacobi* ]] && tune jacobi2d examples/jacobi2d.c --set X=16384 --set Y=32768 --steps 64 \
        --mem-cap 1500M --schedules mmtb,mm --k 8,16,32,64 --chunk 256,512,1024,2048 --streams 2,3 -- 64
    # Chunk lists reach down to what fits the cap (heat-3D: 9.4 MB per plane with the swap
    # buffer, about 100 planes in 1 GB; Himeno L: 7.9 MB per plane, about 75 in 600 MB).
    [[ ${TUNE:-jacobi heat himeno} == *heat* ]] && tune heat3d examples/heat3d.c --set NX=512 --set NY=768 --set NZ=1024 --steps 64 \
        --mem-cap 1G --schedules mmtb,mm --k 8,16,24,32,48 --chunk 4,8,12,16,24,32 --streams 2,3 -- 64
    [[ ${TUNE:-jacobi heat himeno} == *himeno* ]] && tune himeno examples/himeno.c --set MIMAX=257 --set MJMAX=257 --set MKMAX=513 --steps 32 \
        --mem-cap 600M --schedules mmtb,mm --k 4,8,16,24,32 --chunk 2,4,6,8,12,16 --streams 2,3 -- 32
fi
if [[ $parts == *fast* ]]; then
    # The opt-in fast mode: the same programs built with --fmad=true (contracted
    # multiply-adds) against the default --fmad=false, in-core, and `tpace run
    # --fast-math` (arrays within a tolerance) on every example.
    echo "== fast math: --fmad=true against --fmad=false, in-core ==" | tee -a "$table"
    fastflags=${nvflags/--fmad=false/--fmad=true}
    for cfg in "jacobi2d -DX=16384 -DY=16384" "heat3d -DNX=512 -DNY=512 -DNZ=512" "himeno -DMIDDLE" "cip2d -DNX=8192 -DNY=8192"; do
        read -r name defs <<<"$cfg"
        nvcc $nvflags $defs $(cuda_sources "bench/gen/$name") -o "$work/$name.exact" &
        nvcc $fastflags $defs $(cuda_sources "bench/gen/$name") -o "$work/$name.fast" &
        wait
        run "$name exact" "$work/$name.exact" 100 TPACE_SCHEDULE=incore
        run "$name fast" "$work/$name.fast" 100 TPACE_SCHEDULE=incore
    done
    for f in examples/*.c; do
        "$tpace" run "$f" --target cuda --fast-math -- 13 >"$out/fast-$(basename "$f" .c).txt" 2>&1
        rc=$? # before any other command substitution resets $?
        echo "$(basename "$f") --fast-math: exit $rc $(tail -2 "$out/fast-$(basename "$f" .c).txt" | tr '\n' ' ')" | tee -a "$table"
    done
fi
if [[ $parts == *profile* ]]; then
    echo "== profile: Jacobi-2D 16384 x 16384 in-core, the sweep kernel under ncu ==" | tee -a "$table"
    nvcc $nvflags -DX=16384 -DY=16384 $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.mid"
    nvcc $nvflags -DNX=512 -DNY=512 -DNZ=512 $(cuda_sources bench/gen/heat3d) -o "$work/heat.mid"
    run "jacobi2d 16384x16384" "$work/jacobi.mid" 200 TPACE_SCHEDULE=incore
    run "heat3d 512^3" "$work/heat.mid" 200 TPACE_SCHEDULE=incore
    TPACE_SCHEDULE=incore ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
        -k regex:_sweep --launch-skip 4 --launch-count 1 "$work/jacobi.mid" 10 >"$out/ncu-jacobi.txt" 2>&1
    grep -E "DRAM Throughput|Memory Throughput|Compute \(SM\)|Duration|Registers Per|Achieved Occupancy|Block Size|Grid Size" "$out/ncu-jacobi.txt" | tee -a "$table"
    TPACE_SCHEDULE=incore ncu --clock-control none --section SpeedOfLight \
        -k regex:_sweep --launch-skip 4 --launch-count 1 "$work/heat.mid" 10 >"$out/ncu-heat.txt" 2>&1
    grep -E "DRAM Throughput|Memory Throughput|Compute \(SM\)|Duration" "$out/ncu-heat.txt" | tee -a "$table"
fi
# profile_of_device NAME: the bundled profile whose `device` words NAME holds, whole and in any
# case (as generated programs choose: "NVIDIA H200" -> h200), or nothing.
profile_of_device() {
    local f words
    for f in profiles/*.toml; do
        words=$(sed -n 's/^device = "\(.*\)"/\1/p' "$f")
        [[ -n $words ]] && grep -qiwF -- "$words" <<<"$1" && { basename "$f" .toml; return; }
    done
}
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# BENCH_GPU_NAME (bench/dry-run.sh): play a device of that name; the CUDA emulation's programs
# take it as their device's (TPACE_EMULATE_DEVICE_NAME), and so the profile its name matches.
if [[ -n ${BENCH_GPU_NAME:-} ]]; then
    gpu_name=$BENCH_GPU_NAME
    export TPACE_EMULATE_DEVICE_NAME=$BENCH_GPU_NAME
fi
# BENCH_MACHINE=FILE: the profile the parts sweep27 and showit plan with (TPACE_MACHINE), e.g. a
# probe's file from an earlier call; the part probe sets it to its fresh file.
fresh_profile=${BENCH_MACHINE:-}
if [[ $parts == *probe* ]]; then
    # `tpace probe --into` a copy of the bundled profile of the device this runs on (h100 on
    # an H100, h200 on an H200), written to $OUT/NAME.toml to copy over profiles/NAME.toml; a
    # device no bundled profile names gets a new profile, $OUT/probed.toml. About 3 to 4 minutes.
    probed=$(profile_of_device "$gpu_name")
    if [[ -n $probed ]]; then
        echo "== probe: $gpu_name: tpace probe --into a copy of profiles/$probed.toml, written to $res/$probed.toml ==" | tee -a "$table"
        cp "profiles/$probed.toml" "$res/$probed.toml"
        probe_args=(--into "$res/$probed.toml")
    else
        probed=probed
        echo "== probe: $gpu_name (no bundled profile names it): tpace probe -o $res/probed.toml ==" | tee -a "$table"
        probe_args=(-o "$res/probed.toml" --name probed)
    fi
    if "$tpace" probe "${probe_args[@]}" 2>&1 | tee "$res/probe.log" | tee -a "$table"; then
        grep -c '^\[\[kernels\]\]' "$res/$probed.toml" | sed 's/^/[[kernels]] entries: /' | tee -a "$table"
        # The parts after it in this call plan with the fresh figures (TPACE_MACHINE).
        fresh_profile=$res/$probed.toml
    else
        echo "probe: FAILED" | tee -a "$table"
    fi
fi
if [[ $parts == *ab* ]]; then
    # The current translations of Jacobi-2D and heat-3D against those of AB_REV
    # (bench/prepare.sh): one fused launch each under ncu, then in-core and the
    # default plan under an 8G budget on the large grids, alternating.
    rev=$(cat bench/gen/ab-rev 2>/dev/null || echo "")
    if [[ -z $rev ]]; then
        echo "ab: no bench/gen/ab-rev: run AB_REV=<rev> bash bench/prepare.sh first" | tee -a "$table"
    else
        echo "== A/B: this translation (new) against $rev (old), 128 steps ==" | tee -a "$table"
        for cfg in "jacobi2d -DX=49152 -DY=61440" "heat3d -DNX=1152 -DNY=1536 -DNZ=1728"; do
            read -r name defs <<<"$cfg"
            [[ -d bench/gen/ab-$name ]] || continue
            nvcc $nvflags $defs $(cuda_sources "bench/gen/$name") -o "$work/$name.new" &
            nvcc $nvflags $defs $(cuda_sources "bench/gen/ab-$name") -o "$work/$name.old" &
            wait
            for v in old new; do
                [[ ${AB_NCU:-1} == 1 ]] || continue
                TPACE_SCHEDULE=incore ncu --clock-control none --section SpeedOfLight -k regex:_fused \
                    --launch-skip 2 --launch-count 1 "$work/$name.$v" 8 >"$out/ncu-ab-$name-$v.txt" 2>&1
                echo "$name $v: one fused launch in-core: $(grep -E "Duration" "$out/ncu-ab-$name-$v.txt" | tr -s ' ' | head -1)" | tee -a "$table"
            done
            for v in old new; do
                run "$name $v incore" "$work/$name.$v" 128 TPACE_SCHEDULE=incore
                run "$name $v default 8G" "$work/$name.$v" 128 TPACE_DEVICE_MEM=8G
                # AB_NEW_ENV="VAR=VALUE ...": the new translation's default plan once more with those settings.
                if [[ $v == new && -n ${AB_NEW_ENV:-} ]]; then
                    # shellcheck disable=SC2086 # the settings are words on purpose
                    run "$name new default 8G $AB_NEW_ENV" "$work/$name.$v" 128 TPACE_DEVICE_MEM=8G $AB_NEW_ENV
                fi
                # AB_PLAN="SCHEDULE K CHUNK STREAMS FUSE": one fixed plan too, old and new alike.
                if [[ -n ${AB_PLAN:-} ]]; then
                    read -r sc kk bb ss ff <<<"$AB_PLAN"
                    run "$name $v $sc k$kk b$bb S$ss f$ff 8G" "$work/$name.$v" 128 TPACE_DEVICE_MEM=8G \
                        TPACE_SCHEDULE=$sc TPACE_K=$kk TPACE_CHUNK=$bb TPACE_STREAMS=$ss TPACE_FUSE=$ff
                fi
            done
        done
        # Himeno ELARGE (64 steps; AB_HIMENO=0 leaves it out), where the runtime's copies matter
        # most (14 arrays a chunk): the default plan without a budget and under 4G, and mmtb k=64
        # b=26 at 2 and 4 streams, old and new alternating.
        if [[ ${AB_HIMENO:-1} == 1 && -d bench/gen/ab-himeno ]]; then
            nvcc $nvflags -DELARGE $(cuda_sources bench/gen/himeno) -o "$work/himeno.new" &
            nvcc $nvflags -DELARGE $(cuda_sources bench/gen/ab-himeno) -o "$work/himeno.old" &
            wait
            for v in old new; do
                run "himeno ELARGE $v default" "$work/himeno.$v" 64
                run "himeno ELARGE $v default 4G" "$work/himeno.$v" 64 TPACE_DEVICE_MEM=4G
                for S in 2 4; do
                    run "himeno ELARGE $v k64 b26 S$S" "$work/himeno.$v" 64 TPACE_SCHEDULE=mmtb TPACE_K=64 TPACE_CHUNK=26 TPACE_STREAMS=$S
                done
            done
        fi
    fi
fi
if [[ $parts == *links* ]]; then
    echo "== links: the GPUs copying to and from host memory at once (bench/links; it counts them) ==" | tee -a "$table"
    if nvcc -O2 -arch=sm_90 bench/links/host_links.cu -o "$work/host_links" 2>"$out/links.nvcc.txt"; then
        "$work/host_links" "${LINKS_GB:-1}" "${LINKS_REPS:-4}" 2>&1 | tee -a "$table"
    else
        echo "links: nvcc failed: $(head -3 "$out/links.nvcc.txt" | tr '\n' ' ')" | tee -a "$table"
    fi
fi
if [[ $parts == *mpi* ]]; then
    # Several GPUs (issue 25). The --mpi translations (bench/prepare.sh), first checked bit
    # for bit at their default sizes (2 ranks, 1 process driving every GPU, uneven slabs),
    # then timed on the large grids, 128 steps, at 8G and without a budget: 1 GPU, 1 process
    # driving all N GPUs of the node (TPACE_GPUS=N), N ranks of one GPU each (at 8G also with
    # TPACE_CMA=0: the results to rank 0 by MPI alone, no node-local copies). Each row gives
    # the model's predicted seconds and the ratio to 1 GPU of the same grid and budget; each
    # run over several GPUs its phases line (setup, blocks, results, teardown; which arrays go
    # to which ranks) and, for the 1-process runs, its trace under $OUT/traces. Then the 84.6 GB
    # Jacobi-2D on 2 GPUs against 1, where the host has the memory. MPI_GRIDS, MPI_HUGE (off:
    # none), MPI_STEPS, MPI_CHECK=0 (no small checks), MPI_ONLY_ROWS=0 (no `MPI only` rows),
    # MPI_RANK_VARIANTS="TPACE_CMA_THREADS=4 ..." (one more ranks row per setting),
    # MPI_PROC_VARIANTS="TPACE_IN_PLACE=0 ..." (one more 1-process row per setting),
    # MPI_RANK_ROWS=0 (no ranks rows),
    # MPI_HUGE_RANKS=0 (the 84.6 GB grid in one process only), MPI_BUDGETS="8G" (not also
    # `none`) shorten it (bench/dry-run.sh does).
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ngpu=$(nvidia-smi -L | grep -c GPU)
    ngpu=${MPI_GPUS:-$ngpu}
    echo "== MPI and several GPUs: $ngpu GPU(s), $(mpirun --version 2>&1 | head -1) ==" | tee -a "$table"
    mkdir -p "$res/traces"
    grids=${MPI_GRIDS:-"jacobi2d:-DX=49152,-DY=61440 heat3d:-DNX=1152,-DNY=1536,-DNZ=1728"}
    huge=${MPI_HUGE:-"jacobi2d:-DX=86016,-DY=122880"}
    [[ $huge == off ]] && huge=""
    # Every build at once (nvcc takes a while): the small checks' and the timed grids'.
    for name in jacobi2d heat3d himeno; do
        [[ ${MPI_CHECK:-1} == 1 ]] || continue
        dir=bench/gen/mpi-$name
        gcc -O2 -std=gnu11 -Wno-unknown-pragmas "$dir/reference.c" -o "$work/mpi-$name.ref" -lm &
        nvcc $nvflags -ccbin mpicxx -Werror all-warnings $(cuda_sources "$dir") -o "$work/mpi-$name.small" 2>"$out/mpi-$name.nvcc.txt" &
    done
    for cfg in $grids $huge; do
        name=${cfg%%:*}
        defs=${cfg#*:}
        tag=$(tr -d ' ' <<<"${defs//,/ }" | sed 's/-D[A-Z]*=/x/g; s/^x//')
        nvcc $nvflags -ccbin mpicxx ${defs//,/ } $(cuda_sources "bench/gen/mpi-$name") -o "$work/mpi-$name-$tag.big" 2>"$out/mpi-$name-$tag.nvcc.txt" &
    done
    wait
    for name in jacobi2d heat3d himeno; do
        [[ ${MPI_CHECK:-1} == 1 ]] || continue
        [[ -x $work/mpi-$name.small ]] || { echo "$name --mpi: nvcc failed: $(head -3 "$out/mpi-$name.nvcc.txt")" | tee -a "$table"; continue; }
        rm -f "$work/mref.dump" # tpace_dump appends
        TPACE_DUMP="$work/mref.dump" "$work/mpi-$name.ref" 13 >"$work/mref.out" 2>/dev/null
        for how in "2 1" "1 $ngpu" "2 1 mmtb 3 7 3" "3 1 mm 2 5 2" "1 $ngpu mmtb 3 7 3" "1 $ngpu mmtb 2 5 2 TPACE_PEER=0"; do
            read -r ranks gpus s k b n extra <<<"$how"
            rm -f "$work/mgpu.dump"
            set_env=(TPACE_GPUS=$gpus $extra)
            [[ -n $s ]] && set_env+=(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=$n)
            env "${set_env[@]}" TPACE_DUMP="$work/mgpu.dump" mpirun --oversubscribe -np "$ranks" "$work/mpi-$name.small" 13 \
                >"$work/mgpu.out" 2>"$out/mpi-$name-$ranks-$gpus.err"
            line=$(grep '^tpace: ' "$out/mpi-$name-$ranks-$gpus.err" | grep -v ': phases over ' | tail -1)
            if verdict=$("$tpace" compare "$work/mref.dump" "$work/mgpu.dump" --stdout "$work/mref.out" "$work/mgpu.out"); then
                verdict="identical ($ranks ranks x TPACE_GPUS=$gpus${extra:+ $extra})"
            else
                verdict="DIFFERENT ($ranks ranks x TPACE_GPUS=$gpus${extra:+ $extra}): $(tr '\n' ' ' <<<"$verdict") $(tail -2 "$out/mpi-$name-$ranks-$gpus.err" | tr '\n' ' ')"
            fi
            row "mpi-$name" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                "$(field chunks "$line")" "$(field fuse "$line")" 13 "$(field seconds "$line")" "$(field glups "$line")" "$verdict"
        done
    done
    steps=${MPI_STEPS:-128}
    # mrun LABEL RANKS GPUS ENV...: one timed run of $bin, a row (with the model's prediction and,
    # past the first row of a grid and budget, the ratio to it), its phases line under it.
    mrun() {
        local label=$1 ranks=$2 gpus=$3
        shift 3
        local line log="$out/mpi-$tag-${label// /-}.stderr" trace=()
        # Every run traced (ranks past 0 write FILE.rankN beside it).
        trace=(TPACE_TRACE="$res/traces/mpi-$tag-${label//[^A-Za-z0-9._-]/-}.tsv")
        line=$(env TPACE_GPUS=$gpus "${trace[@]}" "$@" mpirun --oversubscribe -np "$ranks" "$bin" "$steps" 2>&1 >/dev/null |
            tee "$log" | grep '^tpace: ' | grep -v ': trace: \|: phases over ' | tail -1)
        if [[ $line != *": schedule="* ]]; then
            row "$name $label" "" "" "" "" "" "" "$steps" "" "" "FAILED: $(tail -4 "$log" | tr '\n' ' ' | cut -c1-500) $*"
            return
        fi
        local glups predicted ratio
        glups=$(field glups "$line")
        predicted=$(field predicted_seconds "$line")
        if [[ -z $base ]]; then
            base=$glups
            ratio="1 GPU"
        else
            ratio=$(awk -v a="$glups" -v b="$base" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx 1 GPU", a / b; else print "no ratio" }')
        fi
        row "$name $label" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
            "$(field chunks "$line")" "$(field fuse "$line")" "$steps" "$(field seconds "$line")" "$glups" \
            "$ratio; predicted $(awk -v p="$predicted" -v s="$(field seconds "$line")" 'BEGIN { printf "%.4g s (measured/predicted %.2f)", p, (p > 0 ? s / p : 0) }'); devices=$(field devices "$line") ranks=$(field ranks "$line") $*"
        grep ': phases over ' "$log" | tail -1 | sed 's/^tpace: [^ ]* phases over /    phases: /' | tee -a "$table"
        grep ': trace: ' "$log" | sed 's/^tpace: [^ ]* trace: /    trace: /' | tee -a "$table"
    }
    # gb NAME DEFS: the grid's bytes (two arrays of floats: Jacobi's a and work, heat-3D's a and b).
    gb() {
        awk -v d="$2" 'BEGIN { n = 1; m = split(d, p, ","); for (i = 1; i <= m; i++) { sub(/.*=/, "", p[i]); n *= p[i] } printf "%.1f", n * 8 / 1e9 }'
    }
    for cfg in $grids; do
        name=${cfg%%:*}
        defs=${cfg#*:}
        tag=$(tr -d ' ' <<<"${defs//,/ }" | sed 's/-D[A-Z]*=/x/g; s/^x//')
        bin=$work/mpi-$name-$tag.big
        [[ -x $bin ]] || { echo "$name $tag --mpi: nvcc failed: $(head -3 "$out/mpi-$name-$tag.nvcc.txt")" | tee -a "$table"; continue; }
        echo "-- $name $tag ($(gb "$name" "$defs") GB), $steps steps, 1 GPU / 1 process x $ngpu GPUs / $ngpu ranks x 1 GPU --" | tee -a "$table"
        for budget in ${MPI_BUDGETS-8G none}; do
            [[ $budget == none ]] && budget=""
            b=${budget:+TPACE_DEVICE_MEM=$budget}
            base=""
            mrun "${budget:-no budget} 1 GPU" 1 1 $b
            if [[ $ngpu -gt 1 ]]; then
                mrun "${budget:-no budget} 1 process $ngpu GPUs" 1 "$ngpu" $b
                # MPI_PROC_VARIANTS="A=1 B=2": one more 1-process row per setting.
                for v in ${MPI_PROC_VARIANTS:-}; do mrun "${budget:-no budget} 1 process $ngpu GPUs $v" 1 "$ngpu" $b "$v"; done
                [[ ${MPI_RANK_ROWS:-1} == 1 ]] && mrun "${budget:-no budget} $ngpu ranks" "$ngpu" 1 $b
                # The results to rank 0 by MPI alone, no node-local copies (at 8G only).
                [[ -n $budget && ${MPI_ONLY_ROWS:-1} == 1 ]] && mrun "${budget} $ngpu ranks MPI only" "$ngpu" 1 $b TPACE_CMA=0
                # MPI_RANK_VARIANTS="A=1 B=2": one more ranks row per setting, for ratios in one call.
                for v in ${MPI_RANK_VARIANTS:-}; do mrun "${budget:-no budget} $ngpu ranks $v" "$ngpu" 1 $b "$v"; done
            fi
        done
    done
    # Beyond one GPU's memory: 2 GPUs against 1 (one process each, and 2 ranks where the host
    # holds the grid twice: every rank holds the whole arrays).
    for cfg in $huge; do
        name=${cfg%%:*}
        defs=${cfg#*:}
        tag=$(tr -d ' ' <<<"${defs//,/ }" | sed 's/-D[A-Z]*=/x/g; s/^x//')
        bin=$work/mpi-$name-$tag.big
        [[ -x $bin ]] || { echo "$name $tag --mpi: nvcc failed: $(head -3 "$out/mpi-$name-$tag.nvcc.txt")" | tee -a "$table"; continue; }
        need=$(gb "$name" "$defs")
        avail=$(awk '/MemAvailable/ { printf "%.1f", $2 * 1024 / 1e9 }' /proc/meminfo)
        echo "-- $name $tag ($need GB, beyond one GPU), $steps steps; host memory available $avail GB --" | tee -a "$table"
        if awk -v n="$need" -v a="$avail" 'BEGIN { exit !(a > 1.1 * n) }'; then
            base=""
            mrun "no budget 1 GPU" 1 1
            mrun "no budget 1 process 2 GPUs" 1 2
            if [[ ${MPI_HUGE_RANKS:-1} == 0 ]]; then
                echo "$name $tag: 2 ranks not run (MPI_HUGE_RANKS=0)" | tee -a "$table"
            elif awk -v n="$need" -v a="$avail" 'BEGIN { exit !(a > 2.2 * n) }'; then
                mrun "no budget 2 ranks" 2 1
            else
                echo "$name $tag: 2 ranks skipped: they hold the grid twice ($need GB each), the host has $avail GB available" | tee -a "$table"
            fi
        else
            echo "$name $tag: skipped: the host has $avail GB available, the grid needs $need GB" | tee -a "$table"
        fi
    done
fi
# report_of LABEL: the report line of an earlier tpace run (`run`), or nothing.
report_of() {
    grep '^tpace: ' "$out/$1.stderr" 2>/dev/null | grep -v ': trace: ' | tail -1
}
# glups_of LABEL: the Glup/s of an earlier row (a tpace run's report, or a managed run's).
glups_of() {
    if [[ -f $out/$1.glups ]]; then
        cat "$out/$1.glups"
    else
        field glups "$(report_of "$1")"
    fi
}
# ratio WHAT LABEL_A LABEL_B: one table line, A's Glup/s over B's.
ratio() {
    local a b
    a=$(glups_of "$2")
    b=$(glups_of "$3")
    awk -v w="$1" -v a="$a" -v b="$b" -v la="$2" -v lb="$3" 'BEGIN {
        if (a > 0 && b > 0) printf "    %s: %.2f (%s / %s)\n", w, a / b, la, lb
        else printf "    %s: no ratio (%s: \"%s\", %s: \"%s\")\n", w, la, a, lb, b }' | tee -a "$table"
}
# mrun LABEL BINARY STEPS MODE [ENV...]: one timed run of the managed-memory Jacobi-2D
# (bench/managed), one row. It reports every step (MANAGED_PROGRESS), and a run that takes
# more than MANAGED_TIMEOUT seconds (default 120) is stopped and rated over the steps it
# finished.
mrun() {
    local label=$1 bin=$2 steps=$3 mode=$4 line last rc
    shift 4
    rm -f "$out/$label.glups"
    env MANAGED_PROGRESS=1 "$@" timeout "${MANAGED_TIMEOUT:-120}" "$bin" "$steps" "$mode" \
        >"$out/$label.stdout" 2>"$out/$label.stderr"
    rc=$?
    line=$(grep '^managed: mode=' "$out/$label.stderr" | tail -1)
    last=$(grep '^managed: progress ' "$out/$label.stderr" | tail -1)
    if [[ -n $line ]]; then
        field glups "$line" >"$out/$label.glups"
        row "$label" managed "" "" "" "" "" "$steps" "$(field seconds "$line")" "$(field glups "$line")" \
            "loop $(field loop_seconds "$line") s, back to the host $(field back_seconds "$line") s"
    elif [[ -n $last ]]; then
        awk -v p="$(field points "$last")" -v s="$(field seconds "$last")" 'BEGIN { printf "%.3f\n", p / s / 1e9 }' >"$out/$label.glups"
        row "$label" managed "" "" "" "" "" "$(field step "$last")" "$(field seconds "$last")" "$(cat "$out/$label.glups")" \
            "STOPPED after ${MANAGED_TIMEOUT:-120} s (exit $rc) with $(field step "$last") of $steps steps done; Glup/s over those, the way back not counted"
    else
        row "$label" managed "" "" "" "" "" "$steps" "" "" "FAILED (exit $rc): $(tail -1 "$out/$label.stderr")"
    fi
}

if [[ $parts == *managed* ]]; then
    # What a user would write instead: the same Jacobi-2D with cudaMallocManaged
    # (bench/managed/jacobi2d_managed.cu), the driver paging the arrays in and out, against
    # tpace's CUDA output on the same grids in this run. First checked bit for bit against
    # the sequential program (13 steps; 1000 x 600 with the row loop forced round by a
    # small GRID_Y_MAX, and 70000 x 64, more rows than gridDim.y may have).
    gpu_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
    echo "== managed memory (cudaMallocManaged) against tpace, Jacobi-2D float; the GPU has ${gpu_mib} MiB ==" | tee -a "$table"
    msrc=bench/managed/jacobi2d_managed.cu
    fit=${MANAGED_FIT:-"-DX=49152 -DY=61440"}    # 24.2 GB: fits in an 80 GB GPU
    over=${MANAGED_OVER:-"-DX=86016 -DY=122880"} # 84.6 GB: more than an 80 GB GPU holds
    gcc -O2 -std=gnu11 -Wno-unknown-pragmas bench/gen/jacobi2d/reference.c -o "$work/mref.small" -lm &
    gcc -O2 -std=gnu11 -Wno-unknown-pragmas -DX=70000 -DY=64 bench/gen/jacobi2d/reference.c -o "$work/mref.tall" -lm &
    nvcc $nvflags -Werror all-warnings -DGRID_Y_MAX=7 "$msrc" -o "$work/managed.small" 2>"$out/managed.small.nvcc.txt" &
    nvcc $nvflags -Werror all-warnings -DX=70000 -DY=64 "$msrc" -o "$work/managed.tall" 2>"$out/managed.tall.nvcc.txt" &
    nvcc $nvflags $fit "$msrc" -o "$work/managed.fit" 2>"$out/managed.fit.nvcc.txt" &
    nvcc $nvflags $over "$msrc" -o "$work/managed.over" 2>"$out/managed.over.nvcc.txt" &
    nvcc $nvflags $fit $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.fit" &
    nvcc $nvflags $over $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.over" &
    wait
    for cfg in "small 1000 600" "tall 70000 64"; do
        read -r size x y <<<"$cfg"
        [[ -x $work/managed.$size ]] || { echo "managed $size: nvcc failed: $(head -3 "$out/managed.$size.nvcc.txt")" | tee -a "$table"; continue; }
        rm -f "$work/mref.dump"
        TPACE_DUMP="$work/mref.dump" "$work/mref.$size" 13 >"$work/mref.out" 2>/dev/null
        # The sequential program dumps `work`, then `a`: keep `a`, the result.
        header="a 4 2 0 $x 0 $y"
        tail -c $((${#header} + 1 + x * y * 4)) "$work/mref.dump" >"$work/mref-a.dump"
        for mode in plain prefetch; do
            rm -f "$work/managed.dump"
            TPACE_DUMP="$work/managed.dump" "$work/managed.$size" 13 "$mode" >"$work/managed.out" 2>"$out/managed-check.err"
            if verdict=$("$tpace" compare "$work/mref-a.dump" "$work/managed.dump" --stdout "$work/mref.out" "$work/managed.out"); then
                verdict="identical (a, and the printed checksum)"
            else
                verdict="DIFFERENT: $(tr '\n' ' ' <<<"$verdict") $(tail -1 "$out/managed-check.err")"
            fi
            row "managed ${x}x${y} check" managed "" "" "" "" "" 13 "" "" "$mode: $verdict"
        done
    done
    ms=${MANAGED_STEPS:-128}
    fitname="jacobi2d ${fit//-D/}"
    run "$fitname tpace" "$work/jacobi.fit" "$ms"
    run "$fitname tpace fuse1" "$work/jacobi.fit" "$ms" TPACE_SCHEDULE=incore TPACE_FUSE=1
    mrun "$fitname managed" "$work/managed.fit" "$ms" plain
    mrun "$fitname managed prefetch" "$work/managed.fit" "$ms" prefetch
    ratio "fits, tpace / managed" "$fitname tpace" "$fitname managed"
    ratio "fits, tpace / managed prefetched" "$fitname tpace" "$fitname managed prefetch"
    ratio "fits, one step per kernel, tpace / managed prefetched" "$fitname tpace fuse1" "$fitname managed prefetch"
    # Beyond the GPU's memory: tpace as in part `huge` (its default plan, k = 64); managed
    # memory oversubscribed for a few steps only (it pages the grid in and out every step).
    overname="jacobi2d ${over//-D/}"
    os=${MANAGED_OVER_STEPS:-2}
    run "$overname tpace" "$work/jacobi.over" "${HUGE_STEPS:-128}" TPACE_K=64
    [[ -n ${MANAGED_SAME_STEPS:-} ]] && run "$overname tpace $os steps" "$work/jacobi.over" "$os"
    for mode in ${MANAGED_OVER_MODES:-plain}; do
        mrun "$overname managed $mode" "$work/managed.over" "$os" "$mode"
        ratio "beyond memory, tpace / managed $mode" "$overname tpace" "$overname managed $mode"
        [[ -n ${MANAGED_SAME_STEPS:-} ]] && ratio "beyond memory, $os steps each, tpace / managed $mode" "$overname tpace $os steps" "$overname managed $mode"
    done
fi

if [[ $parts == *openacc-gpu* ]]; then
    # The OpenACC output (the tpace paper's target) on the GPU: gcc 12 with nvptx
    # offloading, carried from Debian's packages (bench/offload/setup.sh), builds every
    # translation's openacc.c (bench/prepare.sh). ACC_DEVICE_TYPE=nvidia (OPENACC_DEVICE)
    # makes a program stop, not fall back to the host, when it finds no GPU.
    echo "== OpenACC output on the GPU: gcc 12 nvptx offloading (bench/offload), bit for bit, beside the CUDA output ==" | tee -a "$table"
    acc=$PWD/bench/offload/gcc-offload
    if [[ ! -x bench/offload/root/usr/bin/x86_64-linux-gnu-gcc-12 && -f bench/offload/carry/gcc12-nvptx.tar.xz ]]; then
        # tar needs the xz program for .tar.xz; Python's tarfile does it alone.
        mkdir -p bench/offload/root
        tar -C bench/offload/root -xJf bench/offload/carry/gcc12-nvptx.tar.xz 2>"$out/acc-unpack.txt" ||
            python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
                bench/offload/carry/gcc12-nvptx.tar.xz bench/offload/root 2>>"$out/acc-unpack.txt"
    fi
    if ! "$acc" --version >"$out/acc-version.txt" 2>&1; then
        echo "openacc-gpu: no working offload compiler: $(head -3 "$out/acc-version.txt" | tr '\n' ' ')" | tee -a "$table"
    else
        echo "compiler: $(head -1 "$out/acc-version.txt"), $(sed -n 3,20p bench/offload/carry/MANIFEST 2>/dev/null | grep -E '^(gcc-12-offload-nvptx|nvptx-tools) ' | tr '\n' ' ')on $(ldd --version | head -1)" | tee -a "$table"
        accflags="-O2 -std=gnu11 -ffp-contract=off -fopenacc -mcmodel=medium"
        accdev=${OPENACC_DEVICE:-nvidia}
        # OPENACC_PROGRAMS (a regular expression) picks the programs; OPENACC_JIT sets
        # GOMP_NVPTX_JIT (libgomp's -O level for the driver's PTX compiler) for every run.
        [[ -n ${OPENACC_JIT:-} ]] && export GOMP_NVPTX_JIT=$OPENACC_JIT && echo "GOMP_NVPTX_JIT=$OPENACC_JIT" | tee -a "$table"
        for dir in bench/gen/*/; do
            name=$(basename "$dir")
            [[ -f $dir/openacc.c && $name =~ ${OPENACC_PROGRAMS:-.} ]] || continue
            gcc -O2 -std=gnu11 -Wno-unknown-pragmas $(flags_of "$dir") "$dir/reference.c" -o "$work/$name.ref" -lm 2>"$out/$name.gcc.txt" &
            "$acc" $accflags -Wall -Wextra -Werror $(flags_of "$dir") "$dir/openacc.c" -o "$work/$name.acc" -lm 2>"$out/$name.acc.txt" &
        done
        wait
        for dir in bench/gen/*/; do
            name=$(basename "$dir")
            [[ -f $dir/openacc.c && $name =~ ${OPENACC_PROGRAMS:-.} ]] || continue
            [[ -x $work/$name.ref ]] || { echo "$name: reference build failed: $(head -3 "$out/$name.gcc.txt")" | tee -a "$table"; continue; }
            [[ -x $work/$name.acc ]] || { echo "$name: OpenACC build failed: $(head -5 "$out/$name.acc.txt" | tr '\n' ' ')" | tee -a "$table"; continue; }
            rm -f "$work/ref.dump"
            TPACE_DUMP="$work/ref.dump" "$work/$name.ref" 13 >"$work/ref.out" 2>/dev/null
            # Chunk widths near 7 to 11 planes, but at most about 100 chunks: libgomp's queues cost
            # about 1.7 ms a chunk on the H100 (heat-1D's 200000 planes in chunks of 7 took 50 s).
            n0=$(head -c 300 "$work/ref.dump" | head -1 | awk '{ print $5 }')
            grow=$(( ${n0:-0} / 700 + 1 ))
            for cfg in "mmtb 3 $((7 * grow)) 3" "mmtb 13 $((11 * grow)) 4" "mm 3 $((7 * grow)) 2" "naive 1 $((9 * grow)) 2" "incore 1 1 1" "model - - -"; do
                read -r s k b n <<<"$cfg"
                rm -f "$work/acc.dump"
                if [[ $s == model ]]; then set_env=(); else set_env=(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=$n); fi
                line=$(env "${set_env[@]}" ACC_DEVICE_TYPE="$accdev" TPACE_DUMP="$work/acc.dump" \
                    timeout 120 "$work/$name.acc" 13 2>&1 >"$work/acc.out" | tee "$out/$name.acc-run.txt" | grep '^tpace: ' | tail -1)
                if [[ -z $line ]]; then
                    verdict="FAILED: $(tail -2 "$out/$name.acc-run.txt" | tr '\n' ' ')"
                elif verdict=$("$tpace" compare "$work/ref.dump" "$work/acc.dump" --stdout "$work/ref.out" "$work/acc.out"); then
                    if grep -q "within tolerance" <<<"$verdict"; then verdict="identical arrays, reductions within tolerance"; else verdict=identical; fi
                else
                    verdict="DIFFERENT: $(tr '\n' ' ' <<<"$verdict")"
                fi
                row "openacc $name" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                    "$(field chunks "$line")" "" 13 "$(field seconds "$line")" "$(field glups "$line")" "$verdict"
            done
        done
        # `tpace run --target openacc` itself, with the offload gcc as $CC.
        for f in examples/*.c; do
            [[ $(basename "$f" .c) =~ ${OPENACC_PROGRAMS:-.} ]] || continue
            CC=$acc ACC_DEVICE_TYPE="$accdev" "$tpace" run "$f" --target openacc -- 13 >"$out/accrun-$(basename "$f" .c).txt" 2>&1
            rc=$?
            echo "$(basename "$f") (tpace run --target openacc, CC=$acc): exit $rc $(tail -2 "$out/accrun-$(basename "$f" .c).txt" | tr '\n' ' ')" | tee -a "$table"
        done
        # Timed beside the CUDA output on the same grids, the same plans.
        run_timeout=${OPENACC_TIMEOUT:-180}
        st=${OPENACC_STEPS:-32}
        for cfg in ${OPENACC_GRIDS:-"jacobi2d:-DX=16384,-DY=16384:512M" "heat3d:-DNX=512,-DNY=512,-DNZ=512:256M" "himeno:-DMIDDLE:128M" "cip2d:-DNX=8192,-DNY=8192:1G"}; do
            [[ $cfg == none ]] && continue # OPENACC_GRIDS=none: no timing
            IFS=: read -r name defs budget <<<"$cfg"
            defs=${defs//,/ }
            echo "-- $name $defs, $st steps (out-of-core under $budget) --" | tee -a "$table"
            nvcc $nvflags $defs $(cuda_sources "bench/gen/$name") -o "$work/$name.tcu" 2>"$out/$name.tcu.txt" &
            "$acc" $accflags $defs "bench/gen/$name/openacc.c" -o "$work/$name.tacc" -lm 2>"$out/$name.tacc.txt" &
            wait
            label="$name ${defs//-D/}"
            for plan in "incore:TPACE_SCHEDULE=incore" "mmtb:TPACE_SCHEDULE=mmtb TPACE_K=8 TPACE_STREAMS=3 TPACE_DEVICE_MEM=$budget" "default:TPACE_DEVICE_MEM=$budget"; do
                IFS=: read -r what envs <<<"$plan"
                run "$label cuda $what" "$work/$name.tcu" "$st" $envs
                [[ $what == incore ]] && run "$label cuda $what fuse1" "$work/$name.tcu" "$st" $envs TPACE_FUSE=1
                run "$label openacc $what" "$work/$name.tacc" "$st" $envs ACC_DEVICE_TYPE="$accdev"
                ratio "$name $what, OpenACC / CUDA" "$label openacc $what" "$label cuda $what"
                [[ $what == incore ]] && ratio "$name $what, OpenACC / CUDA one step per kernel" "$label openacc $what" "$label cuda $what fuse1"
            done
        done
        unset run_timeout
    fi
fi
if [[ $parts == *jacobi* ]]; then
    echo "== Jacobi-2D float, 49152 x 61440 (2 arrays, 24.2 GB), budget 8G ==" | tee -a "$table"
    nvcc $nvflags -DX=49152 -DY=61440 $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.big"
    perf "jacobi2d 49152x61440" "$work/jacobi.big" ${JACOBI_STEPS:-128} 8G "${JACOBI_MMTB_K:-32 64 128}" "${JACOBI_MM_K:-16 32 64}" 64
    extra "jacobi2d 49152x61440" "$work/jacobi.big" ${JACOBI_STEPS:-128} 8G "${JACOBI_EXTRA:-}"
    # Every step count the 2-D kernels have (bench/gen's translation; 8 on the H100).
    depths "jacobi2d 49152x61440" "$work/jacobi.big" ${JACOBI_STEPS:-128} ${JACOBI_DEPTHS:-8} 8 $((49152 * 61440))
fi
if [[ $parts == *heat* ]]; then
    echo "== heat-3D float, 1152 x 1536 x 1728 (2 arrays, 24.5 GB), budget 8G ==" | tee -a "$table"
    nvcc $nvflags -DNX=1152 -DNY=1536 -DNZ=1728 $(cuda_sources bench/gen/heat3d) -o "$work/heat.big"
    perf "heat3d 1152x1536x1728" "$work/heat.big" ${HEAT_STEPS:-128} 8G "${HEAT_MMTB_K:-16 32 64}" "${HEAT_MM_K:-8 16 32}" 32 2
    extra "heat3d 1152x1536x1728" "$work/heat.big" ${HEAT_STEPS:-128} 8G "${HEAT_EXTRA:-}"
    # Every step count the 3-D kernels have (4).
    depths "heat3d 1152x1536x1728" "$work/heat.big" ${HEAT_STEPS:-128} ${HEAT_DEPTHS:-4} 8 $((1152 * 1536 * 1728))
fi
if [[ $parts == *depth* ]]; then
    # Only the step-count sweeps of the parts jacobi and heat (in-core, traced), on grids
    # that fit the GPU, for a short call: BENCH_PARTS=depth.
    # DEPTH_JACOBI="X Y" and DEPTH_HEAT="NX NY NZ" change the grids (bench/dry-run.sh: tiny ones).
    read -r jx jy <<<"${DEPTH_JACOBI:-49152 61440}"
    read -r hx hy hz <<<"${DEPTH_HEAT:-1152 1536 1728}"
    echo "== fused step counts, in-core: Jacobi-2D $jx x $jy and heat-3D $hx x $hy x $hz, float ==" | tee -a "$table"
    nvcc $nvflags -DX=$jx -DY=$jy $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.depth" &
    nvcc $nvflags -DNX=$hx -DNY=$hy -DNZ=$hz $(cuda_sources bench/gen/heat3d) -o "$work/heat.depth" &
    wait
    depths "jacobi2d ${jx}x$jy" "$work/jacobi.depth" ${JACOBI_STEPS:-128} ${JACOBI_DEPTHS:-8} 8 $((jx * jy))
    depths "heat3d ${hx}x${hy}x$hz" "$work/heat.depth" ${HEAT_STEPS:-128} ${HEAT_DEPTHS:-4} 8 $((hx * hy * hz))
fi
if [[ $parts == *streams* ]]; then
    STREAMS_JACOBI=${STREAMS_JACOBI:-"128:1967:8:3"} STREAMS_HEAT=${STREAMS_HEAT:-"64:38:3:2"}
    # The pipeline's overlap (issue 19 items 1 and 3): Jacobi-2D and heat-3D under the 8G
    # budget, the model's plan, then its k and fuse depth with 2, 3 and 4 streams and with
    # half and a quarter of its chunk width, every run traced (TPACE_TRACE, in
    # $OUT/traces) so the model's pipeline can be checked against what ran.
    echo "== streams and chunk width, traced: Jacobi-2D 49152 x 61440 and heat-3D 1152 x 1536 x 1728, 8G ==" | tee -a "$table"
    nvcc $nvflags -DX=49152 -DY=61440 $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.big" &
    nvcc $nvflags -DNX=1152 -DNY=1536 -DNZ=1728 $(cuda_sources bench/gen/heat3d) -o "$work/heat.big" &
    wait
    TRACE=1
    for cfg in "jacobi2d-49152x61440 $work/jacobi.big" "heat3d-1152x1536x1728 $work/heat.big"; do
        read -r label bin <<<"$cfg"
        run "$label model" "$bin" 128 TPACE_DEVICE_MEM=8G
        line=$(report_of "$label model")
        k=$(field k "$line") b=$(field b "$line") f=$(field fuse "$line")
        [[ -z $b ]] && continue
        for n in 2 3 4; do
            run "$label S$n" "$bin" 128 TPACE_DEVICE_MEM=8G TPACE_SCHEDULE=mmtb TPACE_K=$k TPACE_CHUNK=$b TPACE_FUSE=$f TPACE_STREAMS=$n
        done
        for part in ${STREAMS_NARROWER:-2 4}; do
            for n in ${STREAMS_NARROWER_S:-2 3}; do
                run "$label b-over-$part S$n" "$bin" 128 TPACE_DEVICE_MEM=8G TPACE_SCHEDULE=mmtb TPACE_K=$k \
                    TPACE_CHUNK=$((b / part)) TPACE_FUSE=$f TPACE_STREAMS=$n
            done
        done
        # Plans to hold the model's against (STREAMS_JACOBI / STREAMS_HEAT: "k:b:fuse:S ...").
        extra_plans=$STREAMS_JACOBI
        [[ $label == heat3d* ]] && extra_plans=$STREAMS_HEAT
        for spec in $extra_plans; do
            IFS=: read -r ek eb ef en <<<"$spec"
            run "$label k$ek b$eb fuse$ef S$en" "$bin" 128 TPACE_DEVICE_MEM=8G TPACE_SCHEDULE=mmtb TPACE_K=$ek \
                TPACE_CHUNK=$eb TPACE_FUSE=$ef TPACE_STREAMS=$en
        done
    done
    TRACE=0
fi
if [[ $parts == *close* ]]; then
    # Issue 19's remaining ratios in one short call (BENCH_PARTS="check close", CHECK_ONLY=...):
    # heat-3D's model plan against mmtb at other k and against naive (item 5; naive over
    # CLOSE_NAIVE_STEPS steps, rated per step as the others); Himeno ELARGE (4G) and CIP-2D
    # 16384^2 (3G): the model's plan against mmtb at several k (item 1); and one fused
    # heat-3D kernel, in-core and inside an mmtb chunk, under ncu: what bounds it (item 4).
    echo "== issue 19 ratios: heat-3D 1152 x 1536 x 1728 (8G), Himeno ELARGE (4G), CIP-2D 16384^2 (3G); heat-3D fused kernels under ncu ==" | tee -a "$table"
    # CLOSE_SIZES=tiny: small grids and budgets (bench/dry-run.sh).
    if [[ ${CLOSE_SIZES:-} == tiny ]]; then
        heat="-DNX=40 -DNY=24 -DNZ=16" mid="-DNX=24 -DNY=20 -DNZ=16" him="-DMIMAX=17 -DMJMAX=17 -DMKMAX=33" cip="-DNX=300 -DNY=200"
        hmem=2M himem=8M cmem=6M hx=$((34 * 14 * 14 * 30)) cf=$((97 * 298 * 198)) heatname=heat3d-40x24x16
    else
        heat="-DNX=1152 -DNY=1536 -DNZ=1728" mid="-DNX=512 -DNY=768 -DNZ=1024" him=-DELARGE cip="-DNX=16384 -DNY=16384"
        hmem=8G himem=4G cmem=3G hx=$((34 * 510 * 510 * 1022)) cf=$((97 * 16382 * 16382)) heatname=heat3d-1152x1536x1728
    fi
    nvcc $nvflags $heat $(cuda_sources bench/gen/heat3d) -o "$work/heat.close" &
    nvcc $nvflags $mid $(cuda_sources bench/gen/heat3d) -o "$work/heat.mid" &
    nvcc $nvflags $him $(cuda_sources bench/gen/himeno) -o "$work/himeno.close" &
    nvcc $nvflags $cip $(cuda_sources bench/gen/cip2d) -o "$work/cip.close" &
    wait
    alts "$heatname" "$work/heat.close" 128 $hmem 0 "${CLOSE_HEAT_PLANS:-mmtb:64:47:2 mmtb:43:38:3 mmtb:32:-:3}"
    run "$heatname naive" "$work/heat.close" "${CLOSE_NAIVE_STEPS:-16}" TPACE_DEVICE_MEM=$hmem TPACE_SCHEDULE=naive TPACE_STREAMS=3
    ratio "heat-3D, the model's plan over naive (item 5)" "$heatname model" "$heatname naive"
    alts himeno "$work/himeno.close" 64 $himem $hx "${CLOSE_HIMENO_PLANS:-mmtb:32:-:3 mmtb:16:-:3 mmtb:32:21:2}"
    alts cip2d "$work/cip.close" 64 $cmem $cf "${CLOSE_CIP_PLANS:-mmtb:64:820:4 mmtb:32:-:3 mmtb:64:-:2 mm:64:2048:2}"
    # One fused launch each (2 steps, the 3-D default), full sections: the speed-of-light
    # figures, memory tables, occupancy and warp stalls say what the kernel waits on.
    for where in "incore TPACE_SCHEDULE=incore" "chunk TPACE_SCHEDULE=mmtb TPACE_K=16 TPACE_DEVICE_MEM=${CLOSE_NCU_MEM:-1G}"; do
        read -r name env <<<"$where"
        env $env ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
            --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis \
            -k regex:_fused --launch-skip 6 --launch-count 1 "$work/heat.mid" 16 >"$res/ncu-heat3d-$name.txt" 2>&1
        echo "  heat-3D ($mid) fused kernel, $name (ncu, full report in \$OUT/ncu-heat3d-$name.txt):" | tee -a "$table"
        grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit Rate|L2 Hit Rate|Compute \(SM\) Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Executed Ipc Active|Issue Slots Busy|Block Size|Grid Size|Dynamic Shared Memory Per Block|Warp Cycles Per Issued Instruction)" \
            "$res/ncu-heat3d-$name.txt" | sed 's/^ */    /' | tee -a "$table"
    done
    # Segments of the fused 2-D kernels (TPACE_FUSE_BLOCKS): Jacobi-2D's chunks of the 8G
    # plan (61440 columns, k=128, 8 steps per kernel) on a grid of fewer chunks, traced:
    # does a chunk's kernel time carry a fixed part per segment (2.5 ms a chunk at b=1586
    # in call 5, read off two widths), and do fewer, longer segments shed it?
    if [[ ${CLOSE_SIZES:-} == tiny ]]; then jac="-DX=300 -DY=200" jb="40 20"; else jac="-DX=16384 -DY=61440" jb="1586 793"; fi
    nvcc $nvflags $jac $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.segs"
    TRACE=1
    for b in $jb; do
        for fb in ${CLOSE_FUSE_BLOCKS:-512 1024 2048 4096}; do
            run "jacobi2d ${jac//-D/} b$b blocks$fb" "$work/jacobi.segs" 128 TPACE_SCHEDULE=mmtb TPACE_K=128 TPACE_CHUNK=$b \
                TPACE_STREAMS=3 TPACE_FUSE=8 TPACE_FUSE_BLOCKS=$fb
        done
    done
    TRACE=0
fi
if [[ $parts == *plans* ]]; then
    # The model's plans against their runner-ups (tpace plan's next best, and the best measured
    # before) where issue 19 has no ratio yet: Jacobi-2D and heat-3D on the 8G grids since fused
    # launches aim at one wave, and on the grids larger than the GPU (no budget). Each grid is
    # one binary; PLANS_GRIDS picks them ("jacobi heat jacobi-huge heat-huge"; tiny: bench/dry-run.sh).
    echo "== the model's plans against their runner-ups: Jacobi-2D and heat-3D, 8G and beyond the GPU ==" | tee -a "$table"
    if [[ ${PLANS_SIZES:-} == tiny ]]; then
        jb="-DX=300 -DY=200" hb="-DNX=40 -DNY=24 -DNZ=16" jh="-DX=400 -DY=300" hh="-DNX=48 -DNY=24 -DNZ=16" mem=2M
    else
        jb="-DX=49152 -DY=61440" hb="-DNX=1152 -DNY=1536 -DNZ=1728" jh="-DX=86016 -DY=122880" hh="-DNX=2304 -DNY=2048 -DNZ=2304" mem=8G
    fi
    grids=${PLANS_GRIDS:-jacobi heat jacobi-huge heat-huge}
    [[ " $grids " == *" jacobi "* ]] && nvcc $nvflags $jb $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.plans" &
    [[ " $grids " == *" heat "* ]] && nvcc $nvflags $hb $(cuda_sources bench/gen/heat3d) -o "$work/heat.plans" &
    [[ " $grids " == *" jacobi-huge "* ]] && nvcc $nvflags $jh $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.huge" &
    [[ " $grids " == *" heat-huge "* ]] && nvcc $nvflags $hh $(cuda_sources bench/gen/heat3d) -o "$work/heat.huge" &
    wait
    [[ " $grids " == *" jacobi "* ]] && alts "jacobi2d ${jb//-D/}" "$work/jacobi.plans" 128 $mem 0 \
        "${PLANS_JACOBI:-mmtb:128:1967:3:8 mmtb:128:1586:4:8 mmtb:128:3072:4:8}"
    [[ " $grids " == *" heat "* ]] && alts "heat3d ${hb//-D/}" "$work/heat.plans" 128 $mem 0 "${PLANS_HEAT:-mmtb:64:58:2 mmtb:64:47:2 mmtb:64:38:2:3}"
    [[ " $grids " == *" jacobi-huge "* ]] && alts "jacobi2d ${jh//-D/}" "$work/jacobi.huge" 128 - 0 \
        "${PLANS_JACOBI_HUGE:-mmtb:128:3441:4:8 mmtb:128:1586:3:8 mmtb:64:152:3}"
    [[ " $grids " == *" heat-huge "* ]] && alts "heat3d ${hh//-D/}" "$work/heat.huge" 128 - 0 \
        "${PLANS_HEAT_HUGE:-mmtb:128:165:4 mmtb:128:178:4:2 mmtb:64:-:3 mmtb:128:-:2:2}"
fi
# bench_case LABEL BINARY STEPS "PLAN;PLAN;..." [ENV...]: one process times the pipeline under
# each plan (TPACE_BENCH_PLANS: the program's set-up, longer than the pipeline on these grids,
# runs once; see README), a row per plan with the model's prediction beside the measurement;
# $out/LABEL.rows gets "N plan glups seconds predicted_seconds" per run (N: the plan's place in
# the list, for bench_summary and showit). The process's stderr is kept whole in
# $res/bench-logs/LABEL.txt (it comes back with $OUT); a plan that printed no report, a
# program that ignored TPACE_BENCH_PLANS (translated before it existed: bench/gen is stale),
# an exit status other than 0 and the program's own error lines go to the table.
bench_case() {
    local label=$1 bin=$2 steps=$3 plans=$4
    shift 4
    local name=${label//[^A-Za-z0-9._-]/-}
    local log="$out/$name.bench" start plan="" line note rc n=0 asked refused=0
    start=$(date +%s)
    env "$@" TPACE_BENCH_PLANS="$plans" ${run_timeout:+timeout "$run_timeout"} "$bin" "$steps" >/dev/null 2>"$log"
    rc=$?
    mkdir -p "$res/bench-logs"
    cp "$log" "$res/bench-logs/$name.txt"
    : >"$log.rows"
    asked=$(wc -w <<<"${plans//;/ }")
    while IFS= read -r line; do
        case $line in
        *": bench plan refused: "*)
            row "$label" "?" "" "" "" "" "" "$steps" "" "" "$plan: refused (${line#*refused: })"
            refused=$((refused + 1))
            plan="" ;;
        *": bench plan "[0-9]*": "*)
            [[ -n $plan ]] && row "$label" "?" "" "" "" "" "" "$steps" "" "" "$plan: FAILED: no report (log: bench-logs/$name.txt)"
            n=${line#*: bench plan }
            n=${n%%:*}
            plan=${line#*: bench plan }
            plan=${plan#*: } ;;
        *": schedule="*)
            note="${plan:-(no bench plan)}: predicted $(field predicted_seconds "$line") s"
            [[ $line == *re-planned* ]] && note+=", RE-PLANNED: $(sed 's/.*\(re-planned [^)]*)\).*/\1/' <<<"$line" | cut -c1-300)"
            [[ $line == *"checked after"* ]] && note+=", checked: $(sed 's/.*\(checked after [^;]*\).*/\1/' <<<"$line" | cut -c1-200)"
            [[ $line == *"as predicted"* ]] && note+=", $(grep -o 'the first chunk as predicted ([^)]*)\|block [0-9]* as predicted ([0-9.]*x)' <<<"$line" | tr '\n' ' ')"
            row "$label" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                "$(field chunks "$line")" "$(field fuse "$line")" "$steps" "$(field seconds "$line")" "$(field glups "$line")" "$note"
            [[ -n $plan ]] && echo "$n $plan $(field glups "$line") $(field seconds "$line") $(field predicted_seconds "$line")" >>"$log.rows"
            plan="" ;;
        *": note: "* | *": trace: "*) ;;
        *)  # the program's own words: an error that ended it, most likely
            echo "    ($label: ${line:0:400})" | tee -a "$table" ;;
        esac
    done < <(grep -a '^tpace: ' "$log")
    [[ -n $plan ]] && row "$label" "?" "" "" "" "" "" "$steps" "" "" "$plan: FAILED: no report (log: bench-logs/$name.txt)"
    if ! grep -aq ': bench plan 1: ' "$log"; then
        row "$label" "?" "" "" "" "" "" "$steps" "" "" "FAILED: the program ran no TPACE_BENCH_PLANS plan (translated by a tpace older than it? run bash bench/prepare.sh and carry bench/gen again)"
    elif [[ $(($(wc -l <"$log.rows") + refused)) -lt $asked ]]; then
        # (a plan the program refused, too big for the budget, is answered: its row says why)
        row "$label" "?" "" "" "" "" "" "$steps" "" "" "FAILED: $(wc -l <"$log.rows") of $asked plans reported, $refused refused; last words: $(grep -av '^tpace: .*\(schedule=\|bench plan\)' "$log" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    fi
    [[ $rc == 0 ]] || echo "    ($label: the process ended with status $rc${run_timeout:+ (124: stopped after $run_timeout s)}; log: bench-logs/$name.txt)" | tee -a "$table"
    echo "    ($label: $(($(date +%s) - start)) s for the process, set-up included)" | tee -a "$table"
}
# bench_summary LABEL: the model's runs (plans starting `model`) against the best of the case:
# their ratio and their predicted over measured seconds.
bench_summary() {
    local rows="$out/${1//[^A-Za-z0-9._-]/-}.bench.rows"
    [[ -s $rows ]] || return 0
    # (by seconds: every run of a case has the same steps and points)
    awk -v l="$1" '{ g[NR] = $3; p[NR] = $2; s[NR] = $4; q[NR] = $5; if ($4 > 0 && (best == 0 || $4 < best)) { best = $4; bp = $2; bg = $3 } }
        END { for (i = 1; i <= NR; i++) if (p[i] ~ /^model/ && best > 0 && s[i] > 0)
                  printf "    %s: %s %.1f Glup/s = %.3f of the best (%s, %.1f Glup/s); predicted %.4g s, measured %.4g s (%.2fx)\n",
                         l, p[i], g[i], best / s[i], bp, bg, q[i], s[i], s[i] / (q[i] > 0 ? q[i] : 1) }' "$rows" | tee -a "$table"
}
# fuse_most FILE: the deepest fused step count FILE's translation has (`tpace check`: "TPACE_FUSE 1 to N").
fuse_most() {
    "$tpace" check "$1" 2>&1 | sed -n 's/.*TPACE_FUSE 1 to \([0-9]*\).*/\1/p' | head -1
}
# The profile the device plans with when the probe ran in this call (its fresh file), else the
# bundled one the program finds by the device's name.
machine_env() {
    [[ -z ${fresh_profile:-} ]] && return
    if [[ $fresh_profile == /* ]]; then echo "TPACE_MACHINE=$fresh_profile"; else echo "TPACE_MACHINE=$PWD/$fresh_profile"; fi
}
if [[ $parts == *sweep27* ]]; then
    # Issue 27 item 2: on this GPU, the model's plan against its runner-ups (`tpace plan`'s next
    # best for the same profile, grid, budget and steps) and a coarse sweep: k 32, 64, 128 x streams
    # 2, 3, 4 x the width the model takes for that k and S, half and a quarter of it (the depth
    # the model takes there); SWEEP27_FULL names the cases swept so (default the 8G Jacobi-2D and
    # heat-3D), the others take the model's width only (9 points). Each case is one process
    # (TPACE_BENCH_PLANS); the model's plan runs first, last, and once more with its checks on
    # (TPACE_REPLAN=1: does the device's own profile pass them?). SWEEP27_CASES picks cases.
    echo "== sweep27: $gpu_name, the model's plans against their runner-ups and a coarse sweep (issue 27 item 2) ==" | tee -a "$table"
    if [[ ${SWEEP27_SIZES:-} == tiny ]]; then
        jd="-DX=300 -DY=200" hd="-DNX=40 -DNY=24 -DNZ=16" md="-DMIMAX=17 -DMJMAX=17 -DMKMAX=33" cd="-DNX=300 -DNY=200"
        jset="X=300 Y=200" hset="NX=40 NY=24 NZ=16" mset="MIMAX=17 MJMAX=17 MKMAX=33" cset="NX=300 NY=200"
        jmem=2M hmem=2M mmem=4M cmem=4M st_j=8 st_h=8 st_m=4 st_c=4 ks="2 4 8"
    else
        jd="-DX=49152 -DY=61440" hd="-DNX=1152 -DNY=1536 -DNZ=1728" md=-DELARGE cd="-DNX=16384 -DNY=16384"
        jset="X=49152 Y=61440" hset="NX=1152 NY=1536 NZ=1728" mset="MIMAX=513 MJMAX=513 MKMAX=1025" cset="NX=16384 NY=16384"
        jmem=8G hmem=8G mmem=4G cmem=3G st_j=128 st_h=128 st_m=64 st_c=64 ks="32 64 128"
    fi
    nvcc $nvflags $jd $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.s27" &
    nvcc $nvflags $hd $(cuda_sources bench/gen/heat3d) -o "$work/heat.s27" &
    nvcc $nvflags $md $(cuda_sources bench/gen/himeno) -o "$work/himeno.s27" &
    nvcc $nvflags $cd $(cuda_sources bench/gen/cip2d) -o "$work/cip.s27" &
    wait
    # `tpace plan` for the runner-ups with the profile the program plans with.
    s27_machine=${fresh_profile:-$(profile_of_device "$gpu_name")}
    s27_machine=${s27_machine:-h100}
    echo "  profile: $s27_machine (the program: $( [[ -n ${fresh_profile:-} ]] && echo "TPACE_MACHINE=$fresh_profile" || echo "the bundled profile its device's name matches"))" | tee -a "$table"
    for c in "jacobi2d jacobi.s27 $st_j $jmem examples/jacobi2d.c" "jacobi2d jacobi.s27 $st_j - examples/jacobi2d.c" \
        "heat3d heat.s27 $st_h $hmem examples/heat3d.c" "heat3d heat.s27 $st_h - examples/heat3d.c" \
        "himeno himeno.s27 $st_m $mmem examples/himeno.c" "himeno himeno.s27 $st_m - examples/himeno.c" \
        "cip2d cip.s27 $st_c $cmem examples/cip2d.c" "cip2d cip.s27 $st_c - examples/cip2d.c"; do
        read -r name bin steps mem src <<<"$c"
        case=$name-${mem/-/none}
        [[ -n ${SWEEP27_CASES:-} && " $SWEEP27_CASES " != *" $case "* ]] && continue
        case $name in jacobi2d) sets=$jset ;; heat3d) sets=$hset ;; himeno) sets=$mset ;; *) sets=$cset ;; esac
        setargs=()
        for kv in $sets; do setargs+=(--set "$kv"); done
        capargs=()
        base=()
        if [[ $mem != - ]]; then
            base=(TPACE_DEVICE_MEM=$mem)
            capargs=(--mem-cap "$(numfmt --from=si "$mem")")
        fi
        # The runner-ups: the first three rows of `tpace plan`'s next best (schedule k b S).
        "$tpace" plan "$src" --target cuda --machine "$s27_machine" "${setargs[@]}" "${capargs[@]}" --steps "$steps" \
            >"$out/plan-$case.txt" 2>&1
        grep -E '^best plan|predicted time' "$out/plan-$case.txt" | sed "s/^/  $case: /" | tee -a "$table"
        # (at the best plan's depth: with all four set, a program would take its default depth)
        depth=$(sed -n 's/^best plan: .* fuse=\([0-9]*\).*/\1/p' "$out/plan-$case.txt")
        runners=$(sed -n '/^next best:/,/^$/p' "$out/plan-$case.txt" |
            awk -v f="${depth:-1}" '$1 ~ /^(mmtb|mm|naive|incore)$/ && n < 3 { printf "%s:%s:%s:%s:%s ", $1, $2, $3, $4, f; n++ }')
        # The model's k, b and S at other depths (the probe times 3-D depths on chunks of 40
        # planes, where 4 steps ran slower than 2 on the H200 while in-core 4 ran fastest).
        read -r bk bb bs <<<"$(sed -n 's/^best plan: [a-z]* k=\([0-9]*\) b=\([0-9]*\) streams=\([0-9]*\).*/\1 \2 \3/p' "$out/plan-$case.txt")"
        case $name in jacobi2d) dl="2 4 6 8" ;; heat3d) dl="1 2 3 4 5 6 7 8" ;; *) dl="" ;; esac
        if [[ -n $bk ]]; then
            for f in $dl; do [[ $f != "${depth:-}" ]] && runners+="mmtb:$bk:$bb:$bs:$f "; done
        fi
        kl=$ks
        [[ $steps -lt 128 && ${SWEEP27_SIZES:-} != tiny ]] && kl="16 32 64" # k past the steps is the steps
        widths="-"
        [[ " ${SWEEP27_FULL:-jacobi2d-8G heat3d-8G jacobi2d-2M heat3d-2M} " == *" $case "* ]] && widths="- -/2 -/4"
        sweep=""
        for k in $kl; do
            for n in 2 3 4; do
                for w in $widths; do sweep+="mmtb:$k:$w:$n:- "; done
            done
        done
        plans="model,TPACE_REPLAN=0 $sweep $runners model,TPACE_REPLAN=0 model,TPACE_REPLAN=1"
        bench_case "s27 $case" "$work/$bin" "$steps" "$plans" "${base[@]}" $(machine_env)
        bench_summary "s27 $case"
    done
fi
if [[ $parts == *showit* ]]; then
    # Issue 27 item 3, shown: the model's plan with this device's own profile, and with the other
    # GPU's (the spec-sheet h200 on an H100: bench/showit/h200-spec.toml; h100 on an H200), first
    # without re-planning (what a wrong profile costs), then with it (TPACE_REPLAN=1, the default
    # on a GPU): the last should end within 10 % of the first. SHOWIT_STEPS: 128 (one block: the
    # run starts over after its first chunk) and 512 (more blocks).
    own=$(profile_of_device "$gpu_name")
    case $own in
    h100) wrong=$PWD/bench/showit/h200-spec.toml ;;
    *) wrong=$PWD/profiles/h100.toml ;;
    esac
    echo "== showit: $gpu_name planned with its own profile (${fresh_profile:-${own:-none}}) and with $wrong (issue 27 item 3) ==" | tee -a "$table"
    if [[ ${SHOWIT_SIZES:-} == tiny ]]; then
        jd="-DX=300 -DY=200" hd="-DNX=40 -DNY=24 -DNZ=16" mem=2M
    else
        jd="-DX=49152 -DY=61440" hd="-DNX=1152 -DNY=1536 -DNZ=1728" mem=8G
    fi
    nvcc $nvflags $jd $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.show" &
    nvcc $nvflags $hd $(cuda_sources bench/gen/heat3d) -o "$work/heat.show" &
    wait
    for c in "jacobi2d jacobi.show" "heat3d heat.show"; do
        read -r name bin <<<"$c"
        for steps in ${SHOWIT_STEPS:-128 512}; do
            label="show $name $mem $steps"
            bench_case "$label" "$work/$bin" "$steps" \
                "model,TPACE_REPLAN=0 model,TPACE_REPLAN=0,TPACE_MACHINE=$wrong model,TPACE_REPLAN=1,TPACE_MACHINE=$wrong model,TPACE_REPLAN=1" \
                TPACE_DEVICE_MEM=$mem $(machine_env)
            # Plans 1 to 4 by their place in the list (a plan that did not report has no row).
            awk -v l="$label" '$1 == 1 { own = $4 } $1 == 2 { bad = $4 } $1 == 3 { re = $4 } $1 == 4 { self = $4 }
                END { if (own > 0 && bad > 0 && re > 0)
                          printf "    %s: the wrong profile %.3f of the own profile'"'"'s run without re-planning, %.3f with it (target >= 0.90)%s\n",
                                 l, own / bad, own / re, (self > 0 ? sprintf("; the own profile re-planning %.3f", own / self) : "")
                      else print "    " l ": no ratio (a run did not report: see the rows above)" }' \
                "$out/${label//[^A-Za-z0-9._-]/-}.bench.rows" | tee -a "$table"
        done
    done
fi
if [[ $parts == *huge* ]]; then
    echo "== Jacobi-2D float, 86016 x 122880 (2 arrays, 84.6 GB > the GPU's 80 GB), no budget set ==" | tee -a "$table"
    nvcc $nvflags -DX=86016 -DY=122880 $(cuda_sources bench/gen/jacobi2d) -o "$work/jacobi.huge"
    run "jacobi2d 86016x122880 default" "$work/jacobi.huge" ${HUGE_STEPS:-128} TPACE_K=64
fi
if [[ $parts == *beyond* ]]; then
    echo "== heat-3D float, 2304 x 2048 x 2304 (2 arrays, 87.0 GB > the GPU's 80 GB), no budget set ==" | tee -a "$table"
    nvcc $nvflags -DNX=2304 -DNY=2048 -DNZ=2304 $(cuda_sources bench/gen/heat3d) -o "$work/heat.beyond"
    run "heat3d 2304x2048x2304 default" "$work/heat.beyond" ${BEYOND_STEPS:-128}
fi
if [[ $parts == *codes* ]]; then
    # Issue 26, C as Rodinia and Parboil write it (tests/fixtures/ordinary/): hotspot3D, a
    # `do` loop calling computeTempCPU, whose neighbours go through index variables clamped
    # at the grid's faces (the kernels keep the program's flat index), and Parboil's
    # cpu_stencil, Index3D subscripts over loops that run the innermost index outermost;
    # both swap their buffers by pointer after each step (the kernels follow the rotation;
    # no fused kernel). Each is first checked against the CPU original on a medium grid
    # (several chunks and blocks, 9 steps: the part `check` runs the fixtures' own small
    # grids), then timed on a large one: in-core, mmtb and mm under a budget, the model's
    # plan; and Parboil's sweep inline with a copy sweep (stencil3d_parboil_inline.c, which
    # fused CUDA kernels run), in-core, beside the swapping form's in-core row.
    # CODES_SIZES=tiny: tiny grids (bench/dry-run.sh).
    if [[ ${CODES_SIZES:-} == tiny ]]; then
        mid="-DNX=24 -DNY=20 -DNZ=30" big="-DNX=40 -DNY=32 -DNZ=48" mem=1500K st=8 chunk=7
    else
        mid="-DNX=96 -DNY=80 -DNZ=120" big="-DNX=512 -DNY=512 -DNZ=512" mem=768M st=${CODES_STEPS:-64} chunk=17
    fi
    echo "== issue 26: hotspot3D (do loop, clamped index variables) and Parboil's stencil (Index3D), float ==" | tee -a "$table"
    for name in hotspot3d_do stencil3d_parboil; do
        gcc -O2 -std=gnu11 -Wno-unknown-pragmas $mid "bench/gen/$name/reference.c" -o "$work/$name.mid.ref" -lm 2>"$out/$name.mid.gcc.txt" &
        nvcc $nvflags -Werror all-warnings $mid $(cuda_sources "bench/gen/$name") -o "$work/$name.mid" 2>"$out/$name.mid.nvcc.txt" &
        nvcc $nvflags $big $(cuda_sources "bench/gen/$name") -o "$work/$name.big" 2>"$out/$name.big.nvcc.txt" &
    done
    nvcc $nvflags $big $(cuda_sources bench/gen/stencil3d_parboil_inline) -o "$work/stencil3d_parboil_inline.big" \
        2>"$out/stencil3d_parboil_inline.big.nvcc.txt" &
    wait
    for name in hotspot3d_do stencil3d_parboil; do
        [[ -x $work/$name.mid.ref && -x $work/$name.mid && -x $work/$name.big ]] ||
            { echo "$name: build failed: $(cat "$out/$name".*.txt | head -3)" | tee -a "$table"; continue; }
        rm -f "$work/ref.dump"
        TPACE_DUMP="$work/ref.dump" "$work/$name.mid.ref" 9 >"$work/ref.out" 2>/dev/null
        for cfg in "mmtb 4 $chunk" "mm 4 $chunk" "naive 1 $chunk" "model - -"; do
            read -r s k b <<<"$cfg"
            if [[ $s == model ]]; then set_env=(); else set_env=(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=3); fi
            rm -f "$work/gpu.dump"
            line=$(env "${set_env[@]}" TPACE_DUMP="$work/gpu.dump" "$work/$name.mid" 9 2>&1 >"$work/gpu.out" |
                tee "$out/$name.mid.stderr" | grep '^tpace: ' | tail -1)
            if verdict=$("$tpace" compare "$work/ref.dump" "$work/gpu.dump" --stdout "$work/ref.out" "$work/gpu.out"); then
                verdict=identical
            else
                verdict="DIFFERENT: $(tr '\n' ' ' <<<"$verdict")"
                [[ -f $work/gpu.dump ]] || verdict="FAILED: $(tail -3 "$out/$name.mid.stderr" | tr '\n' ' ' | cut -c1-400)"
            fi
            row "$name ${mid//-D/}" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                "$(field chunks "$line")" "$(field fuse "$line")" 9 "$(field seconds "$line")" "$(field glups "$line")" "$verdict"
        done
        run "$name ${big//-D/} incore" "$work/$name.big" "$st" TPACE_SCHEDULE=incore
        run "$name ${big//-D/} mmtb" "$work/$name.big" "$st" TPACE_SCHEDULE=mmtb TPACE_K=16 TPACE_STREAMS=3 TPACE_DEVICE_MEM=$mem
        run "$name ${big//-D/} mm" "$work/$name.big" "$st" TPACE_SCHEDULE=mm TPACE_K=4 TPACE_STREAMS=3 TPACE_DEVICE_MEM=$mem
        run "$name ${big//-D/} default" "$work/$name.big" "$st" TPACE_DEVICE_MEM=$mem
        if [[ $name == stencil3d_parboil ]]; then
            run "stencil3d_parboil_inline ${big//-D/} incore" "$work/stencil3d_parboil_inline.big" "$st" TPACE_SCHEDULE=incore
        fi
    done
fi
if [[ $parts == *opencl* ]]; then
    # The OpenCL target on the GPU through NVIDIA's OpenCL (OPENCL_PLATFORM, default NVIDIA;
    # `clinfo -l` lists it beside PoCL): (a) every example's OpenCL translation, built with
    # the printed line (cc ... -lOpenCL -lm), against the CPU original for each schedule, bit
    # for bit; (b) `tpace run --target opencl` on every example; (c) the paper's benchmarks, written in its
    # #pragma stencil dialect (tests/fixtures/stencil/), at
    # its sizes (Table 5: heat 1-D 4194304, 2-D 2048 x 2048, 3-D 256^3, Himeno 256 x 128 x 128,
    # float): `tpace tune --target opencl`, every power-of-two work group (x at least
    # OPENCL_MIN_X, default 16: narrower groups waste warps; OPENCL_MIN_X=1 for all of them)
    # by T = 1 .. 4, in-core, kernels timed by OpenCL's profiling, the evolution-vector
    # model's pick for the h100 profile against the best: the ratio and the time to choose.
    # OPENCL_SIZES=tiny runs (c) on tiny grids (a smoke test, e.g. on PoCL:
    # BENCH_PARTS=opencl OPENCL_PLATFORM=portable OPENCL_SIZES=tiny bash bench/gpu.sh).
    # OPENCL_CHECK=0 skips (a) and (b): then (c)'s four benchmarks fit one call (work groups of
    # at most 256 items: heat 1-D 1000 steps, 2-D 400, 3-D 100, Himeno 20 (HIMENO_CL_STEPS), about
    # 6 minutes on the H100); OPENCL_BENCH lists the benchmarks of (c) (default "heat1d heat2d
    # heat3d himeno"). Last, a line per benchmark: the model's pick over the sweep's best (issue
    # 27 item 4: >= 0.90 each) and the time each took to choose, their mean and lowest, and the
    # same read back from the sweeps by bench/opencl-choice.sh, which re-checks a later model
    # offline against $OUT/tune-cl.tar.gz (each tune-cl-NAME/ holds results.csv and args).
    clp=${OPENCL_PLATFORM:-NVIDIA}
    export TPACE_CL_PLATFORM=$clp
    echo "== OpenCL on platform $clp ==" | tee -a "$table"
    clinfo -l 2>&1 | tee -a "$table"
    # CL/cl.h and libOpenCL: the system's, else the CUDA toolkit's.
    if ! echo '#include <CL/cl.h>' | gcc -E -x c - >/dev/null 2>&1 && command -v nvcc >/dev/null; then
        cuda=$(dirname "$(dirname "$(command -v nvcc)")")
        export C_INCLUDE_PATH=$cuda/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
        export LIBRARY_PATH=$cuda/lib64${LIBRARY_PATH:+:$LIBRARY_PATH}
    fi
    clbuild() { # source binary [defines...]: the build line the translation prints, warnings shown
        local src=$1 bin=$2
        shift 2
        gcc -O2 -std=gnu11 -Wall -Wextra -ffp-contract=off "$@" "$src" -o "$bin" -lOpenCL -lm
    }
    [[ ${OPENCL_CHECK:-1} == 1 ]] && echo "-- (a) correctness, 13 steps, arrays bit for bit (work group and T: the program's own choice unless given) --" | tee -a "$table"
    for dir in bench/gen/*/; do
        [[ ${OPENCL_CHECK:-1} == 1 ]] || break
        name=$(basename "$dir")
        [[ -f $dir/opencl.c && -f $dir/reference.c ]] || continue
        gcc -O2 -std=gnu11 -Wno-unknown-pragmas $(flags_of "$dir") "$dir/reference.c" -o "$work/$name.ref" -lm 2>/dev/null
        if ! clbuild "$dir/opencl.c" "$work/$name.cl" $(flags_of "$dir") 2>"$out/$name.cl.txt" || grep -q warning "$out/$name.cl.txt"; then
            echo "$name: the OpenCL build failed or warned: $(head -3 "$out/$name.cl.txt")" | tee -a "$table"
            [[ -x $work/$name.cl ]] || continue
        fi
        rm -f "$work/ref.dump"
        TPACE_DUMP="$work/ref.dump" "$work/$name.ref" 13 >"$work/ref.out" 2>/dev/null
        for cfg in "mmtb 3 7 3 - -" "mmtb 13 11 4 - 4" "mm 5 2 3 16x4x2 3" "naive 1 9 2 - -" "incore 1 1 1 - -" \
            "incore 1 1 1 256 2" "mmtb 9 5 3 3x5x7 3" "model - - - - -"; do
            read -r s k b n wg t <<<"$cfg"
            rm -f "$work/gpu.dump"
            if [[ $s == model ]]; then set_env=(); else set_env=(TPACE_SCHEDULE=$s TPACE_K=$k TPACE_CHUNK=$b TPACE_STREAMS=$n); fi
            [[ $wg != - ]] && set_env+=(TPACE_WG=$wg)
            [[ $t != - ]] && set_env+=(TPACE_T=$t)
            line=$(env "${set_env[@]}" TPACE_DUMP="$work/gpu.dump" \
                "$work/$name.cl" 13 2>&1 >"$work/gpu.out" | tee "$out/$name.cl.stderr" | grep '^tpace: ' | tail -1)
            note=$(grep -o 'work group [0-9x]*, T=[0-9]*' "$out/$name.cl.stderr" | head -1)
            if verdict=$("$tpace" compare "$work/ref.dump" "$work/gpu.dump" --stdout "$work/ref.out" "$work/gpu.out" 2>&1); then
                if grep -q "within tolerance" <<<"$verdict"; then verdict="identical arrays, reductions within tolerance"; else verdict=identical; fi
            else
                verdict="DIFFERENT: $(tr '\n' ' ' <<<"$verdict" | cut -c1-200)"
                # No dump: the program stopped; its last words say why.
                [[ -f $work/gpu.dump ]] || verdict="FAILED: $(grep -v '^tpace: .*work group' "$out/$name.cl.stderr" | tail -3 | tr '\n' ' ' | cut -c1-400)"
                # A forced work group or T the device has no room for is refused in words.
                if [[ ! -f $work/gpu.dump ]] && grep -qE 'lower TPACE_T to|set a smaller TPACE_WG' "$out/$name.cl.stderr"; then
                    verdict="refused as it should be: $(grep -oE '(needs [0-9]+ bytes of local memory|at most [0-9]+ work items)[^;]*' "$out/$name.cl.stderr" | head -1)"
                fi
            fi
            row "cl $name" "$(field schedule "$line")" "$(field k "$line")" "$(field b "$line")" "$(field streams "$line")" \
                "$(field chunks "$line")" "$(field fuse "$line")" 13 "$(field seconds "$line")" "$(field glups "$line")" "$note; $verdict"
        done
    done
    [[ ${OPENCL_CHECK:-1} == 1 ]] && echo "-- (b) tpace run --target opencl, default plan, 13 steps --" | tee -a "$table"
    for f in examples/*.c; do
        [[ ${OPENCL_CHECK:-1} == 1 ]] || break
        "$tpace" run "$f" --target opencl -- 13 >"$out/clrun-$(basename "$f" .c).txt" 2>&1
        rc=$?
        echo "$(basename "$f"): exit $rc $(tail -3 "$out/clrun-$(basename "$f" .c).txt" | tr '\n' ' ')" | tee -a "$table"
    done
    echo "-- (c) the paper's benchmarks: the model's work group and T against every power-of-two work group by T --" | tee -a "$table"
    min_x=${OPENCL_MIN_X:-16}
    wg_list() { # nx ny nz max_items: power-of-two shapes, x >= min_x (or the grid's x), no side past the grid
        local x y z list=""
        for ((x = 1; x <= $1 && x <= $4; x *= 2)); do
            ((x < min_x && x * 2 <= $1)) && continue
            for ((y = 1; y <= $2 && x * y <= $4; y *= 2)); do
                for ((z = 1; z <= $3 && x * y * z <= $4; z *= 2)); do
                    list+="${list:+,}${x}x${y}x${z}"
                done
            done
        done
        echo "$list"
    }
    tune_cl() { # label source steps nx ny nz [--set ...]
        local label=$1 src=$2 steps=$3 nx=$4 ny=$5 nz=$6
        shift 6
        [[ " ${OPENCL_BENCH:-heat1d heat2d heat3d himeno} " == *" $label "* ]] || return 0
        local wgs
        # At most 256 work items (OPENCL_MAX_ITEMS): NVIDIA's OpenCL builds these kernels for no
        # more, and every larger group was refused (2026-11-25).
        wgs=$(wg_list "$nx" "$ny" "$nz" "${OPENCL_MAX_ITEMS:-256}")
        echo "== tpace tune --target opencl $label: $* ($steps steps) ==" | tee -a "$table"
        "$tpace" tune "$src" --target opencl --machine h100 --out "$res/tune-cl-$label" --steps "$steps" \
            --wg "$wgs" "$@" -- "$steps" >"$res/tune-cl-$label.txt" 2>"$out/tune-cl-$label.err"
        echo "exit $? ($(grep -c '^\[' "$out/tune-cl-$label.err") runs)" | tee -a "$table"
        # What it was tuned at, for bench/opencl-choice.sh (the choice re-checked offline).
        echo "$src $steps $*" >"$res/tune-cl-$label/args"
        "$tpace" plan "$src" --target opencl --machine h100 --steps "$steps" "$@" >"$res/plan-cl-$label.txt" 2>&1
        grep -E '^chosen:|stopped|stayed' "$res/plan-cl-$label.txt" | tee -a "$table"
        tail -8 "$res/tune-cl-$label.txt" | tee -a "$table"
    }
    # The benchmarks as the paper writes them, in its #pragma stencil dialect (Fig. 5).
    st=tests/fixtures/stencil
    if [[ ${OPENCL_SIZES:-paper} == tiny ]]; then
        tune_cl heat1d $st/heat1d.c 20 4096 1 1 --set N=4096
        tune_cl heat2d $st/heat2d.c 20 64 48 1 --set NX=64 --set NY=48
        tune_cl heat3d $st/heat3d.c 8 16 12 10 --set NX=16 --set NY=12 --set NZ=10
        tune_cl himeno $st/himeno.c 4 16 8 8 --set MIMAX=8 --set MJMAX=8 --set MKMAX=16
    else
        tune_cl heat1d $st/heat1d.c ${HEAT1D_STEPS:-1000} 4194304 1 1 --set N=4194304
        tune_cl heat2d $st/heat2d.c ${HEAT2D_STEPS:-400} 2048 2048 1 --set NX=2048 --set NY=2048
        tune_cl heat3d $st/heat3d.c ${HEAT3D_STEPS:-100} 256 256 256 --set NX=256 --set NY=256 --set NZ=256
        tune_cl himeno $st/himeno.c ${HIMENO_CL_STEPS:-20} 256 128 128 --set MIMAX=128 --set MJMAX=128 --set MKMAX=256
    fi
    # Issue 27 item 4: per benchmark, the model's pick against the exhaustive sweep's best, and
    # the time each took to choose (the model's: under a millisecond).
    echo "-- the model's choice against the exhaustive sweep (issue 27 item 4: >= 0.90 each) --" | tee -a "$table"
    ratios=""
    for label in heat1d heat2d heat3d himeno; do
        f=$res/tune-cl-$label.txt
        [[ -f $f ]] || continue
        ratio=$(sed -n 's/^ratio model pick \/ best measured: \([0-9.]*\).*/\1/p' "$f")
        pick=$(sed -n "s/^model's pick (\([^,]*\), evolution-vector model, chosen in \([0-9.]*\) ms): work group \(.*\)/\3 (\1, chosen in \2 ms)/p" "$f")
        best=$(sed -n 's/^best measured: \(.*\)/\1/p' "$f")
        how=$(sed -n 's/^  measured (\(.*\)): .*/\1/p' "$f")
        sweep=$(sed -n 's/^time to choose: the model [0-9.]* ms, the exhaustive sweep \(.*\)/\1/p' "$f")
        echo "OpenCL $label: ${ratio:-no ratio} of the best; pick ${pick:-none} ${how:+($how)}; best ${best:-none}; sweep $sweep" | tee -a "$table"
        [[ -n $ratio ]] && ratios+="$ratio "
    done
    if [[ -n $ratios ]]; then
        tr ' ' '\n' <<<"$ratios" | awk 'NF { s += $1; if (min == "" || $1 < min) min = $1; n++ }
            END { if (n) printf "OpenCL: mean ratio %.3f, lowest %.3f, over %d benchmarks (the paper: 0.888 on its GPU, 0.922 on the Xeon Phi)\n", s / n, min, n }' |
            tee -a "$table"
    fi
    # The same sweeps read back by bench/opencl-choice.sh, as a later session re-checks a
    # change to the model's pricing against them offline (its choice should be the pick above).
    TPACE=$tpace bash bench/opencl-choice.sh "$res" 2>&1 | tee -a "$table"
    # The tune folders in one archive (the device tool brings back few files).
    tar -C "$res" -czf "$res/tune-cl.tar.gz" $(cd "$res" && ls -d tune-cl-*/ 2>/dev/null) 2>/dev/null &&
        rm -rf "$res"/tune-cl-*/
fi
if [[ $parts == *kernels3d* ]]; then
    # Issue 28 in one call on one GPU (about 6 minutes): tpace's 3-D kernels beside the
    # hand-written ones of bench/peer, on heat-3D's grid (1152 x 1536 x 1728 float, 128 steps):
    # heat3d_peer's plain and march kernels; tpace heat-3D in-core at every step count its
    # kernels have (1 is the one-step marching kernel), under an 8G budget with the model's
    # plan, naive over K3D_NAIVE_STEPS steps, and the model's own in-core pick; the
    # stencil-dialect heat-3D (float, the same grid) and the ordinary-C 3-D fixtures
    # (himeno_struct, heat3d_poly) one step per kernel; Himeno ELARGE in-core; heat-3D in
    # double in-core at every step count and the model's pick. The device's copy rate (bench/peer/d2d_copy) is measured first:
    # every row gets its ratio to march and to its single-step roofline (copy rate over the
    # model's bytes a point, `tpace plan`). Then ncu (K3D_NCU=0 skips it) of one launch each
    # of tpace's one-step and deepest fused heat-3D kernels and of march on a 512^3 grid:
    # reports in $OUT/ncu-k3d-*.txt. K3D_SIZES=tiny: small grids (bench/dry-run.sh).
    echo "== issue 28: 3-D kernels against the hand-written ones of bench/peer ==" | tee -a "$table"
    if [[ ${K3D_SIZES:-} == tiny ]]; then
        hg="48 40 32" dg="20 16 12" pn=18 him="-DMIMAX=17 -DMJMAX=17 -DMKMAX=33" hs="-DGRID_I=17 -DGRID_J=13 -DGRID_K=21"
        ng="20 20 20" mem=160K copy_gib=0.01
    else
        hg="1152 1536 1728" dg="1152 1536 864" pn=768 him=-DELARGE hs="-DGRID_I=257 -DGRID_J=257 -DGRID_K=513"
        ng="512 512 512" mem=8G copy_gib=4
    fi
    read -r hx hy hz <<<"$hg"
    read -r dx dy dz <<<"$dg"
    read -r nx ny nz <<<"$ng"
    st=${K3D_STEPS:-128}
    label="heat3d ${hx}x${hy}x$hz"
    # The deepest fused step count the 3-D translation has ("TPACE_FUSE 1 to N").
    # K3D_MOST / K3D_DMOST: fewer (float / double) in-core depths, to fit one call.
    most=${K3D_MOST:-$(fuse_most examples/heat3d.c)}
    dmost=${K3D_DMOST:-$(fuse_most tests/fixtures/layouts/heat3d_double.c)}
    peerflags="-O3 -arch=sm_90" # as heat3d_peer.cu's first lines build it
    nvcc $peerflags bench/peer/heat3d_peer.cu -o "$work/peer" 2>"$out/peer.nvcc.txt" &
    nvcc $peerflags bench/peer/d2d_copy.cu -o "$work/copy" 2>"$out/copy.nvcc.txt" &
    nvcc $nvflags -DNX=$hx -DNY=$hy -DNZ=$hz $(cuda_sources bench/gen/heat3d) -o "$work/heat.k3d" &
    # A second build of heat-3D, its rows named "fast": K3D_FAST_FLAGS (default the interior tiles
    # without per-column selects, -DTPACE_TILE_FAST=1; any -D the runtime reads, to set two
    # builds side by side in one call), its in-core rows from K3D_FAST_FROM steps a kernel (2) to
    # the deepest. K3D_FAST=0 leaves it out.
    fastflags=${K3D_FAST_FLAGS:--DTPACE_TILE_FAST=1}
    [[ ${K3D_FAST:-1} == 1 ]] && nvcc $nvflags $fastflags -DNX=$hx -DNY=$hy -DNZ=$hz $(cuda_sources bench/gen/heat3d) -o "$work/heat.k3dfast" 2>"$out/heat.k3dfast.nvcc.txt" &
    nvcc $nvflags -DNZ=$hx -DNY=$hy -DNX=$hz $(cuda_sources bench/gen/stencil-heat3d) -o "$work/sheat.k3d" &
    nvcc $nvflags -DN=$pn $(cuda_sources bench/gen/heat3d_poly) -o "$work/poly.k3d" &
    nvcc $nvflags $hs $(cuda_sources bench/gen/himeno_struct) -o "$work/hstruct.k3d" &
    nvcc $nvflags $him $(cuda_sources bench/gen/himeno) -o "$work/himeno.k3d" &
    nvcc $nvflags -DNX=$dx -DNY=$dy -DNZ=$dz $(cuda_sources bench/gen/heat3d_double) -o "$work/dheat.k3d" &
    [[ ${K3D_NCU:-1} == 1 ]] && nvcc $nvflags -DNX=$nx -DNY=$ny -DNZ=$nz $(cuda_sources bench/gen/heat3d) -o "$work/heat.ncu" &
    wait
    # bytes_of FILE [SET...]: the model's device bytes a point and step (tpace plan).
    bytes_of() {
        local f=$1
        shift
        "$tpace" plan "$f" --steps 2 "$@" 2>/dev/null | sed -n 's/.*per point and step: [0-9]* flops, \([0-9]*\) bytes.*/\1/p' | head -1
    }
    "$work/copy" "$copy_gib" >"$out/copy.txt" 2>&1
    gbs=$(field gbs "$(grep '^copy: ' "$out/copy.txt")")
    echo "device copy rate: ${gbs:-?} GB/s (bytes read + written; best of 10 device-to-device copies of $copy_gib GiB)" | tee -a "$table"
    # The hand-written kernels: one process, both kernels, each row's Glup/s kept for ratios.
    "$work/peer" "$hx" "$hy" "$hz" "$st" >"$out/peer.txt" 2>&1
    for kind in plain march; do
        line=$(grep "^peer: kernel=$kind " "$out/peer.txt")
        field glups "$line" >"$out/peer $kind.glups"
        note="bench/peer/heat3d_peer.cu (nvcc $peerflags)"
        [[ -z $line ]] && note="FAILED: $(tail -1 "$out/peer.txt")"
        row "peer $kind ${hx}x${hy}x$hz" peer "" "" "" "" 1 "$st" "$(field seconds "$line")" "$(field glups "$line")" "$note"
    done
    # The in-core rows are traced: their steps alone (first kernel's start to last kernel's
    # end) are what heat3d_peer times; the grid's upload and download are not (k3d_line).
    for t in $(seq 1 "${most:-4}"); do
        TRACE=1 run "$label incore fuse $t" "$work/heat.k3d" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=$t
    done
    # The model's rows plan with the probe's fresh profile where this call ran it (machine_env).
    TRACE=1 run "$label incore model" "$work/heat.k3d" "$st" TPACE_SCHEDULE=incore $(machine_env)
    if [[ ${K3D_FAST:-1} == 1 ]]; then
        # The same built with $fastflags (K3D_FAST_FLAGS).
        echo "  rows named fast: heat-3D built with $fastflags" | tee -a "$table"
        for t in $(seq "${K3D_FAST_FROM:-2}" "${most:-4}"); do
            TRACE=1 run "$label incore fuse $t fast" "$work/heat.k3dfast" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=$t
        done
        run "$label model $mem fast" "$work/heat.k3dfast" "$st" TPACE_DEVICE_MEM=$mem $(machine_env)
    fi
    run "$label model $mem" "$work/heat.k3d" "$st" TPACE_DEVICE_MEM=$mem $(machine_env)
    run "$label naive $mem" "$work/heat.k3d" "${K3D_NAIVE_STEPS:-4}" TPACE_DEVICE_MEM=$mem TPACE_SCHEDULE=naive TPACE_STREAMS=3
    TRACE=1 run "stencil-heat3d ${hx}x${hy}x$hz incore fuse 1" "$work/sheat.k3d" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=1
    TRACE=1 run "heat3d_poly double $pn^3 incore" "$work/poly.k3d" "${K3D_POLY_STEPS:-32}" TPACE_SCHEDULE=incore
    TRACE=1 run "himeno_struct ${hs//-D/} incore" "$work/hstruct.k3d" "${K3D_HIMENO_STEPS:-64}" TPACE_SCHEDULE=incore
    TRACE=1 run "himeno ${him//-D/} incore" "$work/himeno.k3d" "${K3D_HIMENO_STEPS:-64}" TPACE_SCHEDULE=incore
    for t in $(seq 1 "${dmost:-4}") model; do
        if [[ $t == model ]]; then
            TRACE=1 run "heat3d_double ${dx}x${dy}x$dz incore model" "$work/dheat.k3d" "$st" TPACE_SCHEDULE=incore $(machine_env)
        else
            TRACE=1 run "heat3d_double ${dx}x${dy}x$dz incore fuse $t" "$work/dheat.k3d" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=$t
        fi
    done
    # The table: Glup/s, over march, and over the single-step roofline (copy rate / bytes a point).
    bh=$(bytes_of examples/heat3d.c) bs=$(bytes_of tests/fixtures/stencil/heat3d.c) bp=$(bytes_of tests/fixtures/styles/heat3d_poly.c)
    # himeno_struct's size clause reads its struct's fields: any extents do for the bytes a point.
    bhs=$(bytes_of tests/fixtures/ordinary/himeno_struct.c --set 'p->mrows=64' --set 'p->mcols=64' --set 'p->mdeps=64')
    bhi=$(bytes_of examples/himeno.c) bd=$(bytes_of tests/fixtures/layouts/heat3d_double.c)
    echo "  issue 28, one call (device: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)); march = bench/peer's hand-written marching kernel" | tee -a "$table"
    # Two measures a row: the whole run (tpace's seconds= take the grid's upload and download
    # too), and the steps alone as heat3d_peer times them (its clock starts after its upload
    # and warm-up launches and stops at the last step): for a traced in-core run, the points
    # over the time from the first kernel's start to the last one's end on the device's clock
    # (the trace's "in W s ... F s before the first, L s after the last": W - F - L). Rows
    # without a trace (out-of-core plans, which must move the grid) have the whole run only.
    printf '  %-44s %6s %10s %8s %10s %12s %8s %10s\n' "what" "B/pt" "Glup/s" "/ march" "/ roofline" "steps Glup/s" "/ march" "/ roofline" | tee -a "$table"
    # steps_glups LABEL: the steps-alone Glup/s of a traced run (or a peer row's own figure).
    steps_glups() {
        if [[ -f $out/$1.glups ]]; then
            cat "$out/$1.glups"
            return
        fi
        local tr
        tr=$(grep ': trace: ' "$out/$1.stderr" 2>/dev/null | tail -1)
        [[ -z $tr ]] && return
        sed -n 's/.* in \([0-9.]*\) s, kernels ran .* (\([0-9.]*\) s before the first, \([0-9.]*\) s after the last.*/\1 \2 \3/p' <<<"$tr" |
            awk -v p="$(field points "$(report_of "$1")")" '{ s = $1 - $2 - $3; if (s > 0 && p > 0) printf "%.3f", p / s * 1e-9 }'
    }
    k3d_line() { # LABEL BYTES_A_POINT
        local g m gs ms
        g=$(glups_of "$1")
        m=$(glups_of "peer march")
        gs=$(steps_glups "$1")
        ms=$(steps_glups "peer march")
        awk -v l="$1" -v g="$g" -v m="$m" -v b="$2" -v c="$gbs" -v gs="$gs" -v ms="$ms" 'BEGIN {
            r = (g > 0 && m > 0) ? sprintf("%.2f", g / m) : "?"
            f = (g > 0 && b > 0 && c > 0) ? sprintf("%.2f", g / (c / b)) : "?"
            rs = (gs > 0 && ms > 0) ? sprintf("%.2f", gs / ms) : "-"
            fs = (gs > 0 && b > 0 && c > 0) ? sprintf("%.2f", gs / (c / b)) : "-"
            printf "  %-44s %6s %10s %8s %10s %12s %8s %10s\n", l, b, (g > 0 ? g : "?"), r, f, (gs > 0 ? gs : "-"), rs, fs }' | tee -a "$table"
    }
    k3d_line "peer plain" "$bh"
    k3d_line "peer march" "$bh"
    for t in $(seq 1 "${most:-4}"); do k3d_line "$label incore fuse $t" "$bh"; done
    k3d_line "$label incore model" "$bh"
    if [[ ${K3D_FAST:-1} == 1 ]]; then
        for t in $(seq "${K3D_FAST_FROM:-2}" "${most:-4}"); do k3d_line "$label incore fuse $t fast" "$bh"; done
        k3d_line "$label model $mem fast" "$bh"
    fi
    k3d_line "$label model $mem" "$bh"
    k3d_line "$label naive $mem" "$bh"
    k3d_line "stencil-heat3d ${hx}x${hy}x$hz incore fuse 1" "$bs"
    k3d_line "heat3d_poly double $pn^3 incore" "$bp"
    k3d_line "himeno_struct ${hs//-D/} incore" "$bhs"
    k3d_line "himeno ${him//-D/} incore" "$bhi"
    for t in $(seq 1 "${dmost:-4}"); do k3d_line "heat3d_double ${dx}x${dy}x$dz incore fuse $t" "$bd"; done
    k3d_line "heat3d_double ${dx}x${dy}x$dz incore model" "$bd"
    ratio "heat-3D, the model's plan under $mem over naive (issue 28 item 3: 40x)" "$label model $mem" "$label naive $mem"
    if [[ ${K3D_NCU:-1} == 1 ]]; then
        # One launch each, on a 512^3 grid: tpace's one-step kernel, its deepest fused kernel, march.
        sections="--section SpeedOfLight --section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy"
        TPACE_SCHEDULE=incore TPACE_FUSE=1 ncu --clock-control none $sections -k regex:sweep1_kernel --launch-skip 3 \
            --launch-count 1 "$work/heat.ncu" 8 >"$res/ncu-k3d-fuse1.txt" 2>&1
        TPACE_SCHEDULE=incore TPACE_FUSE=${most:-4} ncu --clock-control none $sections -k regex:_fused --launch-skip 1 \
            --launch-count 1 "$work/heat.ncu" $((4 * ${most:-4})) >"$res/ncu-k3d-fuse${most:-4}.txt" 2>&1
        ncu --clock-control none $sections -k regex:march --launch-skip 3 --launch-count 1 \
            "$work/peer" "$nx" "$ny" "$nz" 6 >"$res/ncu-k3d-march.txt" 2>&1
        for f in fuse1 "fuse${most:-4}" march; do
            echo "  ncu, heat-3D ${nx}x${ny}x$nz, $f (full report: \$OUT/ncu-k3d-$f.txt):" | tee -a "$table"
            grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit Rate|L2 Hit Rate|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Executed Ipc Active|Issue Slots Busy|Executed Instructions  )" \
                "$res/ncu-k3d-$f.txt" | sed 's/^ */    /' | tee -a "$table"
        done
    fi
fi
if [[ $parts == *march* ]]; then
    # The one-step 3-D kernel's loads ahead, unrolling and first column (TPACE_MARCH_AHEAD_PLANES,
    # TPACE_MARCH_UNROLL_TIMES, TPACE_MARCH_ALIGN: one figure for every kernel of a build)
    # against march, on heat-3D's grid in float and double and Himeno ELARGE, in-core one
    # step per launch (about 5 minutes). MARCH_VARIANTS: "ahead:unroll:align ..." ("-": the
    # runtime's own choice; align 1: threads start at the box's first column).
    echo "== the one-step 3-D kernel: planes loaded ahead x unrolling x alignment, against march ==" | tee -a "$table"
    if [[ ${K3D_SIZES:-} == tiny ]]; then
        hg="48 40 32" dg="20 16 12" him="-DMIMAX=17 -DMJMAX=17 -DMKMAX=33"
    else
        hg="1152 1536 1728" dg="1152 1536 864" him=-DELARGE
    fi
    read -r hx hy hz <<<"$hg"
    read -r dx dy dz <<<"$dg"
    st=${K3D_STEPS:-128}
    variants=${MARCH_VARIANTS:-"-:-:1 -:-:- 0:1:- 1:1:- 2:1:- 4:4:-"}
    nvcc -O3 -arch=sm_90 bench/peer/heat3d_peer.cu -o "$work/peer" 2>"$out/peer.nvcc.txt" &
    for v in $variants; do
        IFS=: read -r ahead unroll align <<<"$v"
        defs=""
        [[ $ahead != - ]] && defs+=" -DTPACE_MARCH_AHEAD_PLANES=$ahead"
        [[ $unroll != - ]] && defs+=" -DTPACE_MARCH_UNROLL_TIMES=$unroll"
        [[ ${align:--} != - ]] && defs+=" -DTPACE_MARCH_ALIGN=$align"
        tag=${v//:/x}
        nvcc $nvflags $defs -DNX=$hx -DNY=$hy -DNZ=$hz $(cuda_sources bench/gen/heat3d) -o "$work/heat.m$tag" 2>"$out/heat.m$tag.nvcc.txt" &
        nvcc $nvflags $defs -DNX=$dx -DNY=$dy -DNZ=$dz $(cuda_sources bench/gen/heat3d_double) -o "$work/dheat.m$tag" 2>"$out/dheat.m$tag.nvcc.txt" &
        nvcc $nvflags $defs $him $(cuda_sources bench/gen/himeno) -o "$work/himeno.m$tag" 2>"$out/himeno.m$tag.nvcc.txt" &
    done
    wait
    "$work/peer" "$hx" "$hy" "$hz" "$st" >"$out/peer.txt" 2>&1
    line=$(grep "^peer: kernel=march " "$out/peer.txt")
    field glups "$line" >"$out/peer march ${hx}x${hy}x$hz.glups"
    row "peer march ${hx}x${hy}x$hz" peer "" "" "" "" 1 "$st" "$(field seconds "$line")" "$(field glups "$line")" "bench/peer/heat3d_peer.cu"
    for v in $variants; do
        tag=${v//:/x}
        run "heat3d ahead:unroll:align $v" "$work/heat.m$tag" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=1
        run "heat3d_double ahead:unroll:align $v" "$work/dheat.m$tag" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=1
        run "himeno ahead:unroll:align $v" "$work/himeno.m$tag" "${K3D_HIMENO_STEPS:-64}" TPACE_SCHEDULE=incore
    done
    if [[ ${MARCH_NCU:-1} == 1 ]]; then
        # One launch each on heat-3D's grid: the first variant's one-step kernel and march.
        sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy"
        first=${variants%% *}
        TPACE_SCHEDULE=incore TPACE_FUSE=1 ncu --clock-control none $sections -k regex:sweep1_kernel --launch-skip 2 \
            --launch-count 1 "$work/heat.m${first//:/x}" 4 >"$res/ncu-march-tpace.txt" 2>&1
        TPACE_SCHEDULE=incore TPACE_FUSE=1 ncu --clock-control none $sections -k regex:sweep1_kernel --launch-skip 2 \
            --launch-count 1 "$work/heat.m-x-x-" 4 >"$res/ncu-march-tpace-aligned.txt" 2>&1
        ncu --clock-control none $sections -k regex:march --launch-skip 2 --launch-count 1 \
            "$work/peer" "$hx" "$hy" "$hz" 4 >"$res/ncu-march-peer.txt" 2>&1
        for f in tpace tpace-aligned peer; do
            echo "  ncu, heat-3D ${hx}x${hy}x$hz, one step, $f (full report: \$OUT/ncu-march-$f.txt):" | tee -a "$table"
            grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit Rate|L2 Hit Rate|Achieved Occupancy|Mem Busy|Max Bandwidth)" \
                "$res/ncu-march-$f.txt" | sed 's/^ */    /' | tee -a "$table"
        done
    fi
    for v in $variants; do
        for p in heat3d heat3d_double himeno; do
            ratio "$p one step, ahead:unroll:align $v, over march" "$p ahead:unroll:align $v" "peer march ${hx}x${hy}x$hz"
        done
    done
fi
if [[ $parts == *tiles3d* ]]; then
    # Issue 28: the fused 3-D tiles aligned (along axis 2 every tile starts on whole threads'
    # columns, the first on a sector; a thread's four floats or two doubles in one 16-byte
    # access) against the same translation built otherwise, in one call: TILES_VARIANTS, of
    #   unaligned  the tiles laid out as before (-DTPACE_TILE_UNALIGNED=1 -DTPACE_TILE_WIDE=0:
    #              the reach before the box, column by column);
    #   scalar     aligned, column by column (-DTPACE_TILE_WIDE=0);
    #   aligned    as translated;
    #   fast       aligned, the steady rows of tiles inside the box without the per-column box
    #              selects (-DTPACE_TILE_FAST=1);
    # (default "unaligned aligned fast"), on heat-3D's grid (1152 x 1536 x 1728 float, 128
    # steps) in-core at TILES_FUSE steps a kernel (default 2 and the most), under an 8G budget
    # with the model's plan, and heat-3D in double in-core at the model's pick; bench/peer's
    # march alongside (about 6 minutes). Then ncu (TILES_NCU=0 skips it) of one launch of the
    # deepest fused kernel, unaligned and aligned, on a 512^3 grid.
    echo "== issue 28: fused 3-D tiles aligned, against unaligned and against march ==" | tee -a "$table"
    if [[ ${K3D_SIZES:-} == tiny ]]; then
        hg="48 40 32" dg="20 16 12" ng="20 20 20" mem=160K
    else
        hg="1152 1536 1728" dg="1152 1536 864" ng="512 512 512" mem=8G
    fi
    read -r hx hy hz <<<"$hg"
    read -r dx dy dz <<<"$dg"
    read -r nx ny nz <<<"$ng"
    st=${K3D_STEPS:-128}
    most=$(fuse_most examples/heat3d.c)
    tvariants=${TILES_VARIANTS:-unaligned aligned fast}
    tfuse=${TILES_FUSE:-2 ${most:-4}}
    tile_defs() { # VARIANT: its -D flags
        case $1 in
        unaligned) echo "-DTPACE_TILE_UNALIGNED=1 -DTPACE_TILE_WIDE=0" ;;
        scalar) echo "-DTPACE_TILE_WIDE=0" ;;
        fast) echo "-DTPACE_TILE_FAST=1" ;;
        esac
    }
    nvcc -O3 -arch=sm_90 bench/peer/heat3d_peer.cu -o "$work/peer" 2>"$out/peer.nvcc.txt" &
    for tag in $tvariants; do
        defs=$(tile_defs "$tag")
        nvcc $nvflags $defs -DNX=$hx -DNY=$hy -DNZ=$hz $(cuda_sources bench/gen/heat3d) -o "$work/heat.t$tag" 2>"$out/heat.t$tag.nvcc.txt" &
        nvcc $nvflags $defs -DNX=$dx -DNY=$dy -DNZ=$dz $(cuda_sources bench/gen/heat3d_double) -o "$work/dheat.t$tag" 2>"$out/dheat.t$tag.nvcc.txt" &
        [[ ${TILES_NCU:-1} == 1 && ($tag == unaligned || $tag == aligned) ]] &&
            nvcc $nvflags $defs -DNX=$nx -DNY=$ny -DNZ=$nz $(cuda_sources bench/gen/heat3d) -o "$work/heat.ncu.t$tag" 2>"$out/heat.ncu.t$tag.nvcc.txt" &
    done
    wait
    "$work/peer" "$hx" "$hy" "$hz" "$st" >"$out/peer.txt" 2>&1
    line=$(grep "^peer: kernel=march " "$out/peer.txt")
    field glups "$line" >"$out/peer march ${hx}x${hy}x$hz.glups"
    row "peer march ${hx}x${hy}x$hz" peer "" "" "" "" 1 "$st" "$(field seconds "$line")" "$(field glups "$line")" "bench/peer/heat3d_peer.cu"
    for tag in $tvariants; do
        for t in $tfuse; do
            run "heat3d tiles $tag incore fuse $t" "$work/heat.t$tag" "$st" TPACE_SCHEDULE=incore TPACE_FUSE=$t
        done
        run "heat3d tiles $tag model $mem" "$work/heat.t$tag" "$st" TPACE_DEVICE_MEM=$mem
        run "heat3d_double tiles $tag incore model" "$work/dheat.t$tag" "$st" TPACE_SCHEDULE=incore
    done
    # Each variant over aligned (and aligned over march), where both ran.
    for t in $tfuse "model $mem" double; do
        what="incore fuse $t" prog=heat3d
        [[ $t == model* ]] && what=$t
        [[ $t == double ]] && what="incore model" prog=heat3d_double
        for tag in $tvariants; do
            [[ $tag == aligned ]] && continue
            [[ " $tvariants " == *" aligned "* ]] || continue
            ratio "$prog $what, aligned over $tag" "$prog tiles aligned $what" "$prog tiles $tag $what"
        done
        [[ $prog == heat3d && " $tvariants " == *" aligned "* ]] &&
            ratio "$prog $what, aligned, over march" "$prog tiles aligned $what" "peer march ${hx}x${hy}x$hz"
    done
    if [[ ${TILES_NCU:-1} == 1 ]]; then
        sections="--section SpeedOfLight --section InstructionStats --section MemoryWorkloadAnalysis --section Occupancy"
        for tag in unaligned aligned; do
            [[ -x $work/heat.ncu.t$tag ]] || continue
            TPACE_SCHEDULE=incore TPACE_FUSE=${most:-4} ncu --clock-control none $sections -k regex:_fused --launch-skip 1 \
                --launch-count 1 "$work/heat.ncu.t$tag" $((4 * ${most:-4})) >"$res/ncu-tiles-$tag.txt" 2>&1
            echo "  ncu, heat-3D ${nx}x${ny}x$nz, fuse ${most:-4}, tiles $tag (full report: \$OUT/ncu-tiles-$tag.txt):" | tee -a "$table"
            grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit Rate|L2 Hit Rate|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Executed Ipc Active|Issue Slots Busy|Executed Instructions  )" \
                "$res/ncu-tiles-$tag.txt" | sed 's/^ */    /' | tee -a "$table"
        done
    fi
fi
echo "== table =="
cat "$table"
