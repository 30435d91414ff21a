#!/usr/bin/env bash
# Run here, no GPU needed: bench/gpu.sh's parts `managed` and `openacc-gpu` (or those
# named in BENCH_PARTS) on tiny grids, with stand-ins for the GPU tools, to check the
# script's own logic (builds, checks, rows, ratios) before the one run on the GPU:
#   nvidia-smi  prints a made-up GPU;
#   nvcc        builds with g++/gcc instead: tpace's CUDA output against its CPU
#               emulation (no __CUDACC__), bench/links against the same emulation,
#               bench/managed against bench/managed/cpu_shim;
#   OpenACC     bench/offload/gcc-offload's programs fall back to the host
#               (OPENACC_DEVICE=host: no ACC_DEVICE_TYPE=nvidia).
# Needs bench/gen (bench/prepare.sh) and, for openacc-gpu, bench/offload (setup.sh).
# Fails when the table has a FAILED or DIFFERENT row or lacks what the parts print.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x bench/gen/tpace ]] || { echo "dry-run.sh: run bench/prepare.sh first" >&2; exit 1; }
stubs=$(mktemp -d)
res=$(mktemp -d)
export BENCH_WORK=$(mktemp -d) # gpu.sh's builds and logs apart from any other run's (dry runs side by side)
trap 'rm -rf "$stubs" "$res" "$BENCH_WORK"' EXIT
cat >"$stubs/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in
-L) printf 'GPU 0: dry run (no GPU)\nGPU 1: dry run (no GPU)\n' ;;
*memory.total*nounits*) echo 1000 ;;
*--query-gpu*) echo "dry run (no GPU), 1000 MiB, none" ;;
esac
SH
cat >"$stubs/nvcc" <<'SH'
#!/usr/bin/env bash
# nvcc's command line as gpu.sh writes it, built for the CPU.
set -e
[[ $1 == --version ]] && { echo "dry run: nvcc stand-in (g++)"; exit 0; }
out=a.out; defs=(); srcs=(); xcu=0; cxx=g++; cc=gcc
while [[ $# -gt 0 ]]; do
    case $1 in
    -o) out=$2; shift ;;
    -D* | -I*) defs+=("$1") ;;
    -ccbin) [[ $2 == mpicxx ]] && { cxx=mpicxx; cc=mpicc; }; shift ;; # Open MPI's wrappers: MPI's headers and library
    -Werror | -Xcompiler) shift ;; # and their argument
    -x) [[ $2 == cu ]] && xcu=1; shift ;;
    -O* | -arch=* | --fmad=*) ;;
    *) srcs+=("$1") ;;
    esac
    shift
done
# bench/peer's hand-written CUDA (part kernels3d) has no CPU emulation: a stand-in that
# prints lines of the same form, with made-up figures.
if [[ ${srcs[*]} == *bench/peer/* ]]; then
    if [[ ${srcs[*]} == *d2d_copy* ]]; then
        printf '#!/bin/sh\necho "copy: bytes=1000 repeats=10 seconds=0.000001 gbs=2000.0 (dry run, no GPU)"\n' >"$out"
    else
        printf '#!/bin/sh\nfor k in plain march; do echo "peer: kernel=$k grid=${1}x${2}x${3} steps=$4 seconds=1.0 glups=1.0 (dry run, no GPU)"; done\n' >"$out"
    fi
    chmod +x "$out"
    exit 0
fi
tmp=$(mktemp -d)
objs=()
for s in "${srcs[@]}"; do
    o=$tmp/$(basename "$s").o
    case $s in
    *managed*.cu)
        sed 's/jacobi_step<<<grid, block>>>(dst, src)/TPACE_SHIM_LAUNCH(jacobi_step, grid, block, dst, src)/' "$s" >"$tmp/m.cpp"
        g++ -O2 -ffp-contract=off -Ibench/managed/cpu_shim "${defs[@]}" -c "$tmp/m.cpp" -o "$o" ;;
    *.cu | *.cpp) $cxx -O2 -ffp-contract=off -std=c++17 -mcmodel=medium "${defs[@]}" -x c++ -c "$s" -o "$o" ;;
    *.c) $cc -O2 -ffp-contract=off -std=gnu11 -mcmodel=medium "${defs[@]}" -c "$s" -o "$o" ;;
    esac
    objs+=("$o")
done
$cxx "${objs[@]}" -o "$out" -lm
rm -rf "$tmp"
SH
cat >"$stubs/ncu" <<'SH'
#!/usr/bin/env bash
# ncu's command line as gpu.sh writes it: runs the program (the last two words) and
# prints one made-up metric line, so the part's grep has a line to keep.
"${@: -2:1}" "${@: -1}" >/dev/null 2>&1
echo "    Duration                         usecond        0.00 (dry run, no GPU)"
SH
chmod +x "$stubs/nvidia-smi" "$stubs/nvcc" "$stubs/ncu"
export PATH="$stubs:$PATH" OUT=$res
export BENCH_PARTS=${BENCH_PARTS:-managed openacc-gpu cc}
export CC_EMULATE=1
export MANAGED_FIT="-DX=300 -DY=200" MANAGED_OVER="-DX=400 -DY=300" MANAGED_STEPS=5 MANAGED_OVER_STEPS=3
export CLOSE_SIZES=tiny CLOSE_NAIVE_STEPS=4 CLOSE_NCU_MEM=60K CLOSE_HEAT_PLANS='mmtb:8:7:2 mmtb:6:-:3 mmtb:4:-:3'
export CLOSE_HIMENO_PLANS='mmtb:8:-:3 mmtb:4:-:3 mmtb:8:5:2' CLOSE_CIP_PLANS='mmtb:8:30:4 mmtb:4:-:3 mmtb:8:-:2 mm:8:60:2'
export PLANS_SIZES=tiny PLANS_JACOBI='mmtb:8:40:3:8 mmtb:8:20:4:8' PLANS_HEAT='mmtb:8:7:2 mmtb:6:5:2:3'
export PLANS_JACOBI_HUGE='mmtb:8:50:4:8 mmtb:4:-:3' PLANS_HEAT_HUGE='mmtb:8:9:4 mmtb:4:-:3 mmtb:8:-:2:2'
export HUGE_STEPS=4 MANAGED_SAME_STEPS=1 MANAGED_OVER_MODES="plain prefetch"
export CODES_SIZES=tiny
export K3D_SIZES=tiny K3D_STEPS=12 K3D_NAIVE_STEPS=2 K3D_POLY_STEPS=3 K3D_HIMENO_STEPS=3
export TILES_VARIANTS="unaligned scalar aligned fast"
export OPENACC_DEVICE=host OPENACC_STEPS=4 OPENACC_TIMEOUT=60
export OPENACC_GRIDS="jacobi2d:-DX=200,-DY=120:100K heat3d:-DNX=24,-DNY=20,-DNZ=16:80K"
# Part links: 0.05 GB copies. Part mpi: two emulated GPUs that reach each other, tiny grids, a "huge" one that the host holds.
export LINKS_GB=0.05 LINKS_REPS=2
export TPACE_EMU_DEVICES=2 MPI_STEPS=8 MPI_GRIDS="jacobi2d:-DX=300,-DY=200 heat3d:-DNX=40,-DNY=24,-DNZ=20"
export MPI_HUGE="jacobi2d:-DX=400,-DY=300"
export SWEEP27_SIZES=tiny SHOWIT_SIZES=tiny SHOWIT_STEPS="8 24"
# The emulated device plays the H100 for the parts that pick profiles by its name (sweep27,
# showit: its own profile h100, the wrong one bench/showit/h200-spec.toml, as on the GPU).
export BENCH_GPU_NAME="NVIDIA H100 80GB HBM3"
bash bench/gpu.sh >"$res/log.txt" 2>&1 || true
cat "$res/table.txt"
bad=$(grep -cE 'FAILED|DIFFERENT|no ratio|nvcc failed|build failed|no working|STALE' "$res/table.txt" || true)
want=0
if [[ $BENCH_PARTS == *managed* ]]; then
    # 4 checks identical, 2 + 2 fitting rows, 1 + 1 tpace rows beyond memory, 2 managed.
    [[ $(grep -c 'identical (a, and the printed checksum)' "$res/table.txt") == 4 ]] || want=1
    [[ $(grep -c '^ *fits.*: [0-9.]* (' "$res/table.txt") == 3 ]] || want=1
    [[ $(grep -c '^ *beyond memory.*: [0-9.]* (' "$res/table.txt") == 4 ]] || want=1
fi
if [[ $BENCH_PARTS == *openacc-gpu* ]]; then
    [[ $(grep -c '^openacc .* identical' "$res/table.txt") -ge $((6 * 22)) ]] || want=1
    [[ $(grep -c 'tpace run --target openacc.*exit 0 .*identical' "$res/table.txt") == 6 ]] || want=1
    [[ $(grep -c 'OpenACC / CUDA.*: [0-9.]* (' "$res/table.txt") == 8 ]] || want=1
fi
if [[ " $BENCH_PARTS " == *" cc "* ]]; then
    # 3 step counts x 6 plans, each identical.
    [[ $(grep -c '^cc-make .*identical (both loops' "$res/table.txt") == 18 ]] || want=1
fi
if [[ $BENCH_PARTS == *close* ]]; then
    # heat-3D: the model's plan, 3 others, naive; Himeno 4 plans, CIP 5; one ratio; 2 ncu reports.
    [[ $(grep -cE '^(heat3d-[0-9x]+|himeno|cip2d) .*[0-9]\.[0-9]' "$res/table.txt") -ge 14 ]] || want=1
    [[ $(grep -c 'GFLOP/s' "$res/table.txt") == 9 ]] || want=1
    grep -E "model's plan over naive \(item 5\): [0-9.]* \(" "$res/table.txt" || want=1
    [[ $(grep -c 'Duration' "$res/table.txt") == 2 ]] || want=1
    [[ $(grep -cE '^jacobi2d X=300 Y=200 b[0-9]+ blocks[0-9]+ +mmtb .* 8 +128 ' "$res/table.txt") == 8 ]] || want=1
fi
if [[ $BENCH_PARTS == *codes* ]]; then
    # 4 checks per program, identical; 4 timed rows each and Parboil's inline form.
    [[ $(grep -cE '^(hotspot3d_do|stencil3d_parboil) NX=24 NY=20 NZ=30 .* identical$' "$res/table.txt") == 8 ]] || want=1
    [[ $(grep -cE '^(hotspot3d_do|stencil3d_parboil|stencil3d_parboil_inline) NX=40 NY=32 NZ=48 .*[0-9]\.[0-9]' "$res/table.txt") == 9 ]] || want=1
fi
if [[ $BENCH_PARTS == *mpi* ]]; then
    # 3 programs x 6 small checks; 2 grids x 2 budgets x 3 timed rows, 2 by MPI alone and 3
    # beyond one GPU, each with a prediction; a phases line under each run over several GPUs
    # (2 x 2 x 2 + 2 + 2); rank 0's results as the chunks finish, copied and by MPI alone.
    [[ $(grep -c '^mpi-.* identical (' "$res/table.txt") == 18 ]] || want=1
    [[ $(grep -cE '^(jacobi2d|heat3d) .*(1 GPU|x 1 GPU); predicted [0-9.e+-]+ s \(measured/predicted' "$res/table.txt") == 17 ]] || want=1
    [[ $(grep -c '^    phases: 2 device(s)' "$res/table.txt") == 12 ]] || want=1
    grep -q 'phases: 2 device(s) and 2 rank(s).*to rank 0 alone: a;' "$res/table.txt" || want=1
    grep -q 'phases: 2 device(s) and 2 rank(s).*chunks finished: [0-9]* bytes .* of which [1-9][0-9]* copied straight' "$res/table.txt" || want=1
    grep -q 'phases: 2 device(s) and 2 rank(s).*chunks finished: [0-9]* bytes .* of which 0 copied straight' "$res/table.txt" || want=1
fi
if [[ $BENCH_PARTS == *links* ]]; then
    # The two emulated GPUs (TPACE_EMU_DEVICES): 1 and 2 of them, each way and both (6 lines with rates).
    [[ $(grep -cE '^gpus=[12] way=(host-to-device|device-to-host|both ways) +[0-9]+\.[0-9] GB/s in all' "$res/table.txt") == 6 ]] || want=1
fi
if [[ $BENCH_PARTS == *kernels3d* ]]; then
    # The copy rate; the peer's 2 rows, tpace's 4 + 3 heat-3D rows (fuse 1 .. 4 at least), 4
    # fixture rows and 2 double rows, then as many lines of the table with a ratio to march
    # (the stand-in peer's march: 1.0) and to the roofline, the steps alone beside them ("-"
    # for the untraced out-of-core rows), of which the peer's 2 and tpace's in-core rows (fuse
    # 1 .. 4, the model's, 3 fast, 5 fixture and double rows at least) with figures; the naive
    # ratio; 3 ncu reports.
    grep -E '^device copy rate: 2000.0 GB/s' "$res/table.txt" || want=1
    [[ $(grep -cE '^(peer|heat3d|stencil-heat3d|heat3d_poly|himeno_struct|himeno|heat3d_double) .* [0-9]+\.[0-9]+  ' "$res/table.txt") -ge 15 ]] || want=1
    [[ $(grep -cE '^  [a-z_-]+.* [0-9]+ +[0-9.]+ +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+ +([0-9.]+|-) +([0-9]+\.[0-9]+|-) +([0-9]+\.[0-9]+|-)$' "$res/table.txt") -ge 15 ]] || want=1
    [[ $(grep -cE '^  [a-z_-]+.* [0-9]+ +[0-9.]+ +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+ +[0-9.]+ +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+$' "$res/table.txt") -ge 15 ]] || want=1
    grep -E "model's plan under 160K over naive .*: [0-9.]* \(" "$res/table.txt" || want=1
    [[ $(grep -c 'Duration' "$res/table.txt") == 3 ]] || want=1
fi
if [[ $BENCH_PARTS == *march* ]]; then
    # march's row, then 3 programs at each of the 6 settings, and as many ratios to march.
    [[ $(grep -cE '^(heat3d|heat3d_double|himeno) ahead:unroll:align .* [0-9]+\.[0-9]+  ' "$res/table.txt") == 18 ]] || want=1
    [[ $(grep -cE 'one step, ahead:unroll:align .* over march: [0-9.]+ \(' "$res/table.txt") == 18 ]] || want=1
fi
if [[ $BENCH_PARTS == *tiles3d* ]]; then
    # march's row; 4 builds (all of them: TILES_VARIANTS below) x (2 step counts + the plan
    # under the budget + double): 16 rows; 3 ratios to aligned and 1 to march per heat-3D
    # case (3), 3 for double; 2 ncu reports.
    [[ $(grep -cE '^(heat3d|heat3d_double) tiles (unaligned|scalar|aligned|fast) .* [0-9]+\.[0-9]+  ' "$res/table.txt") == 16 ]] || want=1
    [[ $(grep -cE '^    heat3d(_double)? .*, aligned(,)? over (unaligned|scalar|fast|march): [0-9.]+ \(' "$res/table.txt") == 15 ]] || want=1
    [[ $(grep -A1 'tiles [a-z]* (full report: $OUT/ncu-tiles' "$res/table.txt" | grep -c 'Duration') == 2 ]] || want=1
fi
if [[ $BENCH_PARTS == *plans* ]]; then
    # The model's plan and the plans given: 3 + 3 + 3 + 4 rows.
    [[ $(grep -cE '^(jacobi2d|heat3d) [XYNZ=0-9 ]+ (model|mmtb) .*[0-9]\.[0-9]' "$res/table.txt") == 13 ]] || want=1
fi
if [[ $BENCH_PARTS == *sweep27* ]]; then
    # 8 cases, each the model's plan three times against the best of its runs (a plan at another
    # depth may not fit: said and skipped), and the fused programs' other depths.
    [[ $(grep -cE '^    s27 [a-z0-9]+-[0-9A-Za-z]+: model.* of the best .*predicted .* measured ' "$res/table.txt") == 24 ]] || want=1
    [[ $(grep -cE '^s27 (jacobi2d|heat3d)-.* mmtb:[0-9]+:[0-9]+:[0-9]:[0-9]: ' "$res/table.txt") -ge 12 ]] || want=1
fi
if [[ $BENCH_PARTS == *showit* ]]; then
    # 2 programs x 2 step counts: the wrong profile without and with re-planning.
    [[ $(grep -cE 'the wrong profile [0-9.]+ of the own .* [0-9.]+ with it' "$res/table.txt") == 4 ]] || want=1
    # Each case's four plans reported, the wrong profile's two naming bench/showit/h200-spec.toml.
    [[ $(grep -cE '^show (jacobi2d|heat3d) .* model,TPACE_REPLAN=[01](,TPACE_MACHINE=[^ ]*h200-spec.toml)?: predicted' "$res/table.txt") == 16 ]] || want=1
    [[ $(grep -c '^== showit: NVIDIA H100 80GB HBM3 planned with its own profile (h100) and with .*bench/showit/h200-spec.toml' "$res/table.txt") == 1 ]] || want=1
fi
if [[ $BENCH_PARTS == *managed* ]]; then
    # Once more, with a managed run too slow for its time limit: stopped, and rated
    # over the steps it finished.
    MANAGED_OVER_STEPS=10000000 MANAGED_TIMEOUT=2 MANAGED_SAME_STEPS= MANAGED_OVER_MODES=plain BENCH_PARTS=managed \
        bash bench/gpu.sh >"$res/log2.txt" 2>&1 || true
    grep -E 'managed plain .*STOPPED after 2 s .* of 10000000 steps done' "$res/table.txt" || want=1
    grep -E 'beyond memory, tpace / managed plain: [0-9.]* \(' "$res/table.txt" || want=1
fi
if [[ $bad != 0 || $want != 0 ]]; then
    echo "dry-run.sh: $bad bad line(s); expected lines missing: $want (log: the table above)" >&2
    tail -30 "$res/log.txt" >&2
    exit 1
fi
echo "dry-run.sh: parts \"$BENCH_PARTS\" ran as expected (stand-ins for the GPU tools, tiny grids)"
