#!/bin/sh
# Build each of the larger examples (Himeno, CIP, FDTD) with gcc (as C) and g++ (as C++), run
# both builds with a few step counts, print the checksum lines, and fail
# unless the two builds print the same lines and a second run repeats the
# first (the programs are deterministic).
#
#     examples/check-seq.sh            # from anywhere
#     CC=gcc-12 CXX=g++-12 examples/check-seq.sh
#
# -ffp-contract=off keeps every a*b+c as written (no fused multiply-add), in
# both languages, on every architecture: the sequential meaning tpace must
# reproduce bit for bit.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-gcc}
CXX=${CXX:-g++}
FLAGS="-O2 -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas"
STEPS="0 1 7 13"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

fail=0
# program  defines (name of the build)
for entry in "himeno -DXSMALL" "himeno" "cip2d" "cip2d -DNX=37 -DNY=23" "fdtd2d" "fdtd2d -DNX=20 -DNY=30"; do
    prog=${entry%% *}
    defs=${entry#"$prog"}
    src="$here/$prog.c"
    name=$(echo "$prog$defs" | tr -c 'A-Za-z0-9_\n' '_')
    # shellcheck disable=SC2086 # $defs is a list of words
    $CC -std=gnu11 $FLAGS $defs "$src" -o "$tmp/$name.c.bin" -lm
    # shellcheck disable=SC2086
    $CXX -x c++ $FLAGS $defs "$src" -o "$tmp/$name.cxx.bin"
    for n in $STEPS; do
        c=$("$tmp/$name.c.bin" "$n" | tail -n 1)
        cxx=$("$tmp/$name.cxx.bin" "$n" | tail -n 1)
        again=$("$tmp/$name.c.bin" "$n" | tail -n 1)
        if [ "$c" = "$cxx" ] && [ "$c" = "$again" ]; then
            printf '%-22s C = C++  %s\n' "$prog$defs" "$c"
        else
            printf '%-22s MISMATCH\n  C:     %s\n  C++:   %s\n  again: %s\n' \
                "$prog$defs" "$c" "$cxx" "$again"
            fail=1
        fi
    done
done

if [ "$fail" -ne 0 ]; then
    echo "check-seq: the gcc and g++ builds disagree (or a rerun differs)" >&2
    exit 1
fi
echo "check-seq: all builds agree"
