#!/usr/bin/env python3
"""prep.py SRC_DIR SUBST OUT_DIR — copies runtime/cuda/ts_cuda_*.cuh into OUT_DIR for the host
emulator. Every function whose body holds inline PTX (`asm`) keeps its declaration verbatim and
gets its body from SUBST (emu_subst.cuh, keyed by the whitespace-normalised declaration); every
other line of every header is copied unchanged (but declarations of the extern __shared__
ts_smem, which the emulator defines per CTA), so the tiling, indexing and reduction code under
test is the project's own. Fails if a PTX function has no substitute, if a substitute matches
nothing (stale), or if any `asm` is left."""
import re, sys

src, subst_path, out = sys.argv[1:4]
norm = lambda s: " ".join(s.split())

subst = {}
key = None
for line in open(subst_path):
    if line.startswith("// @ "):
        key = norm(line[5:])
        subst[key] = ""
    elif key is not None:
        subst[key] += line
used = set()

def process(name):
    lines = open(f"{src}/{name}").read().split("\n")
    res, i, n_sub = [], 0, 0
    while i < len(lines):
        # A definition: declaration lines, then "{" at column 0 ... "}" at column 0.
        if lines[i] == "{":
            j = i + 1
            while lines[j] != "}":
                j += 1
            body = lines[i:j + 1]
            if any(re.search(r"\basm\b", l) for l in body):
                k = len(res)
                while k > 0 and res[k - 1].strip() and not res[k - 1].startswith("//") \
                        and not res[k - 1].rstrip().endswith((";", "}")):
                    k -= 1
                decl = norm(" ".join(res[k:]))
                if decl not in subst:
                    sys.exit(f"prep.py: {name}: no emulator substitute for PTX function: {decl}")
                used.add(decl)
                res.append(subst[decl].rstrip("\n"))
                n_sub += 1
                i = j + 1
                continue
        m = re.match(r"^(\S.*\))\s*\{.*\basm\b.*\}\s*$", lines[i])
        if m:  # a one-line definition
            decl = norm(m.group(1))
            if decl not in subst:
                sys.exit(f"prep.py: {name}: no emulator substitute for PTX function: {decl}")
            used.add(decl)
            res.append(m.group(1) + " " + subst[decl].strip())
            n_sub += 1
            i += 1
            continue
        # The emulator's ts_smem is a macro for the running CTA's shared memory (emu_core.h).
        if re.match(r"^\s*extern __shared__ .*\bts_smem\[\];\s*$", lines[i]):
            res.append(re.sub(r"extern.*", "// (emu: ts_smem is the running CTA's)", lines[i]))
            i += 1
            continue
        res.append(lines[i])
        i += 1
    text = "\n".join(res)
    if re.search(r"\basm\s*(volatile\s*)?\(", re.sub(r"//.*", "", text)):
        sys.exit(f"prep.py: {name}: inline PTX left outside a recognised function")
    open(f"{out}/{name}", "w").write(text)
    return n_sub

total = 0
for h in ["ts_cuda_prims.cuh", "ts_cuda_gemm.cuh", "ts_cuda_wgmma.cuh", "ts_cuda_tma.cuh", "ts_cuda_rows.cuh",
          "ts_cuda_attn.cuh"]:
    total += process(h)
stale = set(subst) - used
if stale:
    sys.exit("prep.py: stale substitutes (no such PTX function): " + "; ".join(sorted(stale)))
print(f"prep.py: {total} PTX functions substituted")
