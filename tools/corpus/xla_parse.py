#!/usr/bin/env python3
"""XLA's own parse of every HLO text file under a directory, as JSON (an oracle for tests that
must not need the jax release that wrote the files).

Run with the python of a venv that has jaxlib (the release whose parser you want):
  /path/venv/bin/python tools/corpus/xla_parse.py ROOT OUT.json

HLO text files are found by content (the file starts with ``HloModule ``). Per file (key: the
path relative to ROOT, '/'-separated) the JSON has ``module`` (the parsed module's name) and
``computations``: per computation in XLA's order, ``name``, ``opcodes`` ({printed opcode: count}
over the instructions XLA's parsed module has) and ``n_instructions``; plus ``synthesized``: the
get-tuple-elements XLA's parser made that the text does not print (the compact tuple operands
``%x#k``), each ``[name, opcode, operand names, tuple index, computation]``; ``renamed``: printed
instructions XLA's parser named differently (a synthesised get-tuple-element took the name first:
XLA names them ``<operand>_<k>``, made unique module-wide with ``.N``), each ``[XLA's name,
opcode, computation]``; or
``error`` (XLA's message) when XLA does not parse the file. ``jaxlib``: the parser's release.

Opcode spelling: HloOpcode enum name → kebab case with the exceptions below, checked against
``to_string()`` (``… <opcode>(``) of every instruction.
"""
from __future__ import annotations

import json
import os
import re
import sys

import jaxlib
from jaxlib import _hlo

_OPCODE_EXCEPTIONS = {
    "kAtan2": "atan2", "kCos": "cosine", "kSin": "sine", "kExp": "exponential",
    "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one", "kOptimizationBarrier": "opt-barrier",
    "kClz": "count-leading-zeros", "kPopulationCount": "popcnt", "kTopK": "topk",
    "kRngBitGenerator": "rng-bit-generator", "kFft": "fft",
}
_NAME = re.compile(r"%([^\s,()=]+)")


def opcode_text(op) -> str:
    name = op.name
    if name in _OPCODE_EXCEPTIONS:
        return _OPCODE_EXCEPTIONS[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name[1:]).lower()


def printed_names(text: str) -> dict[str, set[str]]:
    """Per computation name, the instruction names the text defines (`%name = ` / `name = ` at
    the start of an indented line)."""
    out: dict[str, set[str]] = {}
    cur = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            m = re.match(r"(?:ENTRY\s+)?%?([^\s(]+)\s*[({]", line)
            cur = m[1] if m and not line.startswith("HloModule") else None
            if cur is not None:
                out.setdefault(cur, set())
            continue
        m = re.match(r"\s+(?:ROOT\s+)?%?([^\s=]+)\s*=\s", line)
        if m and cur is not None:
            out[cur].add(m[1])
    return out


def parse_file(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        module = _hlo.hlo_module_from_text(text)
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {str(e)[:500]}"}
    printed_by_comp = printed_names(text)
    comps, synth, renamed = [], [], []
    for comp in module.computations():
        counts: dict[str, int] = {}
        n = 0
        printed = printed_by_comp.get(comp.name, set())
        for ins in comp.instructions():
            op = opcode_text(ins.opcode)
            s = ins.to_string()
            if f" {op}(" not in s:
                raise SystemExit(f"{path}: opcode spelling {op!r} not in {s[:200]!r}")
            counts[op] = counts.get(op, 0) + 1
            n += 1
            if ins.name not in printed:
                if op == "get-tuple-element":
                    idx = re.search(r"\bindex=(\d+)", s)
                    synth.append([ins.name, op, [o.name for o in ins.operands()], int(idx[1]) if idx else None,
                                  comp.name])
                else:
                    renamed.append([ins.name, op, comp.name])
        comps.append({"name": comp.name, "opcodes": dict(sorted(counts.items())), "n_instructions": n})
    out = {"module": module.name, "computations": comps}
    if synth:
        out["synthesized"] = synth
    if renamed:
        # printed instructions whose name XLA's parser changed: a synthesised get-tuple-element
        # took the name first (XLA names it <operand>_<k> and makes it unique module-wide)
        out["renamed"] = renamed
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, out_path = argv
    result = {}
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            try:
                with open(p, "rb") as f:
                    head = f.read(64)
            except OSError:
                continue
            if not head.lstrip(b"\n").startswith(b"HloModule "):
                continue
            result[os.path.relpath(p, root).replace(os.sep, "/")] = parse_file(p)
    doc = {"jaxlib": jaxlib.__version__, "files": result}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    bad = sum(1 for v in result.values() if "error" in v)
    print(f"{len(result)} HLO text files, {bad} not parsed by XLA (jaxlib {jaxlib.__version__}) -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
