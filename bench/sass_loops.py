#!/usr/bin/env python3
"""Static look at a kernel's loops, no GPU needed: for each loop (a backward branch)
of the kernels whose mangled name contains KERNEL, the SASS instructions in it, its
barriers, global loads, integer compares and local-memory (spill) accesses.

    nvcc -O3 -arch=sm_90 --fmad=false -cubin -x cu prog.cu -o prog.cubin
    python3 bench/sass_loops.py prog.cubin fusedILi4E

Needs cuobjdump and nvdisasm on the PATH (CUDA toolkit, or the PyPI wheels
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm: nvidia/cu13/bin)."""
import re
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cubin, kernel = sys.argv[1], sys.argv[2]
    dump = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True)
    if dump.returncode != 0:
        sys.exit(f"cuobjdump failed: {dump.stderr.strip()}")
    found = False
    for func in re.split(r"\n\s*Function : ", dump.stdout)[1:]:
        name = func.split("\n", 1)[0].strip()
        if kernel not in name:
            continue
        found = True
        code = []
        for line in func.split("\n"):
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
            if m:
                code.append((int(m.group(1), 16), m.group(2)))
        print(f"{name}: {len(code)} instructions")
        for addr, text in code:
            target = re.search(r"BRA\s.*?0x([0-9a-f]+)", text)
            if not target or int(target.group(1), 16) >= addr:
                continue
            start = int(target.group(1), 16)
            body = [t for a, t in code if start <= a <= addr]
            count = lambda word: sum(word in t for t in body)
            print(f"  loop {start:#x}-{addr:#x}: {len(body)} instructions, {count('BAR')} barriers, "
                  f"{count('LDG')} LDG, {count('ISETP')} ISETP, {count('LDL') + count('STL')} LDL/STL")
    if not found:
        sys.exit(f"no kernel whose name contains {kernel} in {cubin}")


if __name__ == "__main__":
    main()
