#!/usr/bin/env bash
# Run here (Debian 12 "bookworm", x86-64, apt): fetch gcc 12 with OpenACC offloading to
# NVIDIA GPUs (nvptx) from Debian's packages, without installing anything:
#   bench/offload/debs/   the .deb files (apt-get download)
#   bench/offload/root/   the packages unpacked (dpkg -x), stripped to what compiling
#                         OpenACC C for the host and nvptx needs
#   bench/offload/carry/  gcc12-nvptx.tar.xz (root/ packed) and MANIFEST (package
#                         versions, sizes): what travels to the GPU machine
#                         (not with OFFLOAD_NO_PACK=1)
# All three are ignored by git. Then bench/offload/gcc-offload compiles with it here
# (no GPU: the program falls back to the host) and, after bench/gpu.sh's part
# `openacc-gpu` unpacks carry/ there, on the GPU machine:
#   device run, carry ["bench/gen", "bench/offload/carry"],
#   command "BENCH_PARTS=openacc-gpu bash bench/gpu.sh"
# The compiler runs on glibc 2.36 or later (cc1 and lto1 need GLIBC_2.36; the lent
# machines have Ubuntu 24.04, glibc 2.39); `as` and `ld` are the machine's own.
set -euo pipefail
cd "$(dirname "$0")"
# gcc 12 itself, its nvptx back end and libgomp's nvptx plugin (all one version), the
# nvptx assembler and linker, and the libraries cc1 and lto1 link (gmp, mpfr, mpc, isl).
# zlib and zstd, which they also link, are on every machine and not carried.
pkgs=(gcc-12 cpp-12 gcc-12-base libgcc-12-dev libgomp1 gcc-12-offload-nvptx libgomp-plugin-nvptx1
    nvptx-tools libgmp10 libmpfr6 libmpc3 libisl23)
rm -rf debs root carry
mkdir -p debs root carry
(cd debs && apt-get download "${pkgs[@]}")
for f in debs/*.deb; do dpkg -x "$f" root; done

# gcc-12, its offload compiler and libgomp's plugin must be one release.
versions=$(for p in gcc-12 cpp-12 libgcc-12-dev libgomp1 gcc-12-offload-nvptx libgomp-plugin-nvptx1; do
    dpkg-deb -f debs/"${p}"_*.deb Version
done | sort -u)
if [[ $(wc -l <<<"$versions") != 1 ]]; then
    echo "setup.sh: the gcc 12 packages are of different versions: $versions" >&2
    exit 1
fi

# Strip what compiling C with OpenACC offloading does not use.
g=root/usr/lib/gcc/x86_64-linux-gnu/12
rm -rf root/usr/share root/usr/lib/gcc/x86_64-linux-gnu/12/plugin
rm -f root/usr/bin/*lto-dump* root/usr/bin/*gcov* root/usr/bin/*gcc-ar* root/usr/bin/*gcc-nm* \
    root/usr/bin/*gcc-ranlib* root/usr/bin/nvptx-none-run* root/usr/bin/*cpp-12
# The host's lto1 runs only for -flto; the sanitizers, transactional memory, quadmath,
# the GDB plugin library and gcov are not used.
rm -f "$g"/lto1 "$g"/lib{asan,tsan,lsan,ubsan,itm,quadmath,cc1,backtrace,gcov}* "$g"/*san*.{o,spec} "$g"/libitm.spec
# nvptx: Fortran, the OpenMP (-mgomp) and PTX 3.1 multilibs.
rm -rf "$g"/accel/nvptx-none/{mgomp,mptx-3.1} "$g"/accel/nvptx-none/libgfortran* "$g"/accel/nvptx-none/libcaf_single.a \
    "$g"/accel/nvptx-none/libgcov.a
find root -xtype l -delete # links to what was removed

# Check that it compiles an OpenACC kernel for nvptx (PTX in the binary) and runs it here.
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat >"$t/probe.c" <<'C'
#include <openacc.h>
#include <stdio.h>
int main(void)
{
    float a[256];
    for (int i = 0; i < 256; i++)
        a[i] = (float)i;
#pragma acc parallel loop copy(a)
    for (int i = 0; i < 256; i++)
        a[i] = a[i] * 0.5f + 1.0f;
    printf("%g %d\n", a[255], acc_get_num_devices(acc_device_nvidia));
    return 0;
}
C
./gcc-offload -O2 -std=gnu11 -ffp-contract=off -fopenacc -Wall -Wextra -Werror "$t/probe.c" -o "$t/probe"
grep -qa '^.target sm_' "$t/probe" || { echo "setup.sh: no nvptx code in the probe" >&2; exit 1; }
[[ $("$t/probe") == "128.5 "* ]] || { echo "setup.sh: the probe computed $("$t/probe")" >&2; exit 1; }

# OFFLOAD_NO_PACK=1 (CI, which only compiles here) skips the packing, the slow part.
if [[ -n ${OFFLOAD_NO_PACK:-} ]]; then
    echo "setup.sh: gcc 12 with nvptx offloading unpacked into bench/offload/root ($(du -sb root | cut -f1) bytes), not packed"
    exit 0
fi
tar -C root -cJf carry/gcc12-nvptx.tar.xz .
{
    echo "gcc 12 with nvptx offloading, Debian bookworm packages, unpacked and stripped by bench/offload/setup.sh"
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    for f in debs/*.deb; do echo "$(dpkg-deb -f "$f" Package) $(dpkg-deb -f "$f" Version) $(sha256sum "$f" | cut -c1-16)"; done
    echo "unpacked: $(du -sb root | cut -f1) bytes; packed: $(stat -c %s carry/gcc12-nvptx.tar.xz) bytes"
} >carry/MANIFEST
cat carry/MANIFEST
