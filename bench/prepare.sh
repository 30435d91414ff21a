#!/usr/bin/env bash
# Run here (no GPU needed): translates every example and fixture to CUDA into
# bench/gen/NAME/ (translated.cpp is the .cu text, reference.c the sequential
# program with its array dump), checking each on the CPU emulation first, and
# copies the release tpace binary to bench/gen/tpace (for `tpace compare`,
# `tpace run` and `tpace tune` on the GPU machine). Then `bench/gpu.sh` on the
# GPU machine builds, checks and times them:
#   device run, carry ["bench/gen"], command "bash bench/gpu.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
rm -rf bench/gen
mkdir -p bench/gen
cp target/release/tpace bench/gen/tpace
for f in examples/*.c tests/fixtures/layouts/*.c tests/fixtures/reductions/*.c; do
    name=$(basename "$f" .c)
    mkdir -p "bench/gen/$name"
    target/release/tpace run "$f" --target cuda --schedule mmtb --k 3 --chunk 7 --keep "bench/gen/$name" -- 5 \
        | tee "bench/gen/$name/cpu-check.txt"
    rm -f "bench/gen/$name/reference" "bench/gen/$name/translated" bench/gen/"$name"/*.dump
done
