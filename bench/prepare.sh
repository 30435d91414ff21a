#!/usr/bin/env bash
# Run here (no GPU needed): translates every example and fixture to CUDA into
# bench/gen/NAME/ (translated.cu holds the kernels, translated.host.c the host
# program, reference.c the sequential program with its array dump), checking each
# on the CPU emulation first, and
# writes each one's OpenACC translation beside it (bench/gen/NAME/openacc.c, for gpu.sh's
# part `openacc-gpu`; compiled here with nvptx offloading when bench/offload/setup.sh
# has been run), and
# copies the release tpace binary to bench/gen/tpace (for `tpace compare`,
# `tpace run` and `tpace tune` on the GPU machine). Then `bench/gpu.sh` on the
# GPU machine builds, checks and times them:
#   device run, carry ["bench/gen"], command "bash bench/gpu.sh"
# Each example's OpenCL translation goes to bench/gen/NAME/opencl.c (checked on PoCL
# here first), and the paper's heat 1-D and 2-D (bench/opencl/) to bench/gen/cl-NAME/,
# for gpu.sh's part `opencl` (NVIDIA's OpenCL on the GPU machine). OPENCL=0 skips them.
# With AB_REV=<git revision>, Jacobi-2D and heat-3D are also translated by tpace as
# it was at that revision, into bench/gen/ab-NAME/ (with AB_REV in bench/gen/ab-rev),
# for gpu.sh's part `ab`: the two translations timed in one run.
# PREPARE_ONLY="NAME ...": only those examples and fixtures (a call that runs a few parts),
# with the --mpi translations of those among jacobi2d, heat3d and himeno.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
rm -rf bench/gen
mkdir -p bench/gen
# What bench/gen is translated from (gpu.sh says when its checkout differs: bench/sources.sh).
. bench/sources.sh
sources_list >bench/gen/sources.list
sources_sum bench/gen/sources.list >bench/gen/sources.sum
cp target/release/tpace bench/gen/tpace
for f in examples/*.c tests/fixtures/{layouts,reductions,styles,ordinary,stencil,liveness,sweeps}/*.c; do
    [[ -f $f ]] || continue
    name=$(basename "$f" .c)
    # PREPARE_ONLY="jacobi2d heat3d": only those programs (and the --mpi translations below).
    [[ -z ${PREPARE_ONLY:-} || " $PREPARE_ONLY " == *" $name "* ]] || continue
    # The stencil dialect's heat and Himeno fixtures share the examples' names.
    [[ $f == tests/fixtures/stencil/* ]] && name=stencil-$name
    mkdir -p "bench/gen/$name"
    # A fixture's preprocessor flags (its first line: /* tpace-test: -I DIR -DN=40 */): the
    # -D flags go to bench/gen/NAME/flags for gpu.sh's compilers, the -I folders' headers
    # beside the translation (quoted includes are found there first).
    flags=()
    read -r -a words <<<"$(sed -n '1s|^/\* *tpace-test: *\(.*\) *\*/.*|\1|p' "$f")"
    for ((i = 0; i < ${#words[@]}; i++)); do
        case ${words[i]} in
        -I) i=$((i + 1)); flags+=(-I "$(dirname "$f")/${words[i]}"); cp "$(dirname "$f")/${words[i]}"/*.h "bench/gen/$name/" ;;
        -D*) flags+=("${words[i]}"); echo -n "${words[i]} " >>"bench/gen/$name/flags" ;;
        esac
    done
    target/release/tpace run "$f" "${flags[@]}" --target cuda --schedule mmtb --k 3 --chunk 7 --keep "bench/gen/$name" -- 5 \
        | tee "bench/gen/$name/cpu-check.txt"
    rm -f "bench/gen/$name/reference" "bench/gen/$name/translated" bench/gen/"$name"/*.dump bench/gen/"$name"/*.o
    target/release/tpace translate "$f" "${flags[@]}" --target openacc -o "bench/gen/$name/openacc.c" 2>/dev/null
    if [[ -x bench/offload/root/usr/bin/x86_64-linux-gnu-gcc-12 ]]; then
        # The nvptx compile that gpu.sh's part `openacc-gpu` does there, without warnings.
        bench/offload/gcc-offload -O2 -std=gnu11 -ffp-contract=off -fopenacc -Wall -Wextra -Werror "${flags[@]}" \
            "bench/gen/$name/openacc.c" -o "bench/gen/$name/openacc" -lm
        rm -f "bench/gen/$name/openacc"
    fi
    if [[ ${OPENCL:-1} == 1 ]]; then
        target/release/tpace run "$f" "${flags[@]}" --target opencl --schedule mmtb --k 3 --chunk 7 -- 5 \
            | tee "bench/gen/$name/opencl-cpu-check.txt"
        target/release/tpace translate "$f" "${flags[@]}" --target opencl -o "bench/gen/$name/opencl.c" 2>/dev/null
    fi
done
[[ -x bench/offload/root/usr/bin/x86_64-linux-gnu-gcc-12 ]] ||
    echo "prepare.sh: no bench/offload/root: the OpenACC translations were not compiled for nvptx here (bench/offload/setup.sh)"
# --mpi translations for gpu.sh's part `mpi` (several ranks, TPACE_GPUS).
for name in jacobi2d heat3d himeno; do
    [[ -f bench/gen/$name/reference.c ]] || continue # not among PREPARE_ONLY's
    mkdir -p "bench/gen/mpi-$name"
    target/release/tpace translate "examples/$name.c" --target cuda --mpi -o "bench/gen/mpi-$name/translated.cu" 2>/dev/null
    cp "bench/gen/$name/reference.c" "bench/gen/mpi-$name/reference.c"
done
if [[ ${OPENCL:-1} == 1 ]]; then
    for f in bench/opencl/*.c; do
        name=cl-$(basename "$f" .c)
        mkdir -p "bench/gen/$name"
        cp "$f" "bench/gen/$name/source.c"
        target/release/tpace run "$f" --target opencl -- 3 | tee "bench/gen/$name/opencl-cpu-check.txt"
        target/release/tpace translate "$f" --target opencl -o "bench/gen/$name/opencl.c" 2>/dev/null
    done
fi
if [[ -n ${AB_REV:-} ]]; then
    ab=$(mktemp -d)
    git worktree add --detach -q "$ab/tree" "$AB_REV"
    trap 'git worktree remove --force "$ab/tree"; rm -rf "$ab"' EXIT
    cargo build --release -q --manifest-path "$ab/tree/Cargo.toml" --target-dir "$ab/target"
    for name in jacobi2d heat3d himeno; do
        mkdir -p "bench/gen/ab-$name"
        # A revision from before the split writes one .cu text; a later one writes two files.
        "$ab/target/release/tpace" translate "examples/$name.c" --target cuda -o "bench/gen/ab-$name/translated.cu"
        if [[ ! -f bench/gen/ab-$name/translated.host.c ]]; then
            mv "bench/gen/ab-$name/translated.cu" "bench/gen/ab-$name/translated.cpp"
        fi
    done
    git rev-parse --short "$AB_REV" >bench/gen/ab-rev
fi
