"""The sample of XLA's own HLO test inputs in tests/data/xla_inputs/openxla/ (issue 31).

Every file there is a verbatim copy of a FileCheck test input (`*.hlo`) of the openxla/xla
repository (Apache License 2.0), at the path it has there. ``SOURCES.json`` beside them records,
for each, the repository, the path, the commit it was taken from and the git blob id of its
bytes (``git hash-object``), so a copy can be checked against XLA's history.

    python tests/xla_inputs/collect.py --check
        recompute every stored file's blob id and compare it with SOURCES.json (also run by
        tests/test_hlo_xla_inputs.py)
    python tests/xla_inputs/collect.py --from-checkout PATH/TO/xla [--path xla/…/x.hlo …]
        copy the listed files (default: every file in SOURCES.json) from a git checkout of
        openxla/xla at the recorded commits (`git show COMMIT:PATH`), or add new paths at the
        checkout's HEAD, and rewrite SOURCES.json

How the sample was chosen: small files (the sample stays well under 300 KB) from each directory
of XLA that holds `.hlo` test inputs — the HLO tools (`xla/tools`, `xla/hlo/tools`), pass tests
(`xla/hlo/transforms/tests`), the HLO→MHLO importer (`xla/hlo/translate`), and the GPU/CPU
codegen tests (`xla/backends/*/codegen/**/tests`), whose inputs are written by hand: header-less
modules, instructions spread over lines, attributes on lines of their own, JSON backend configs
over many lines. Benchmarks (multi-megabyte dumps) and files that are mostly CHECK lines
(`cholesky_expander.hlo`, `rng_expander.hlo`, `import.hlo`) were left out for size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "xla_inputs" / "openxla"
SOURCES = DATA / "SOURCES.json"
REPO = "openxla/xla"


def blob_id(data: bytes) -> str:
    """git's object id of a blob holding ``data`` (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def load() -> list[dict]:
    return json.loads(SOURCES.read_text(encoding="utf-8"))["files"]


def save(entries: list[dict]) -> None:
    doc = {"repository": REPO, "license": "Apache-2.0", "files": sorted(entries, key=lambda e: e["path"])}
    SOURCES.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def check() -> list[str]:
    """Problems: a stored file missing from SOURCES.json, listed but absent, or changed."""
    problems = []
    entries = {e["path"]: e for e in load()}
    stored = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*.hlo")}
    for path in sorted(stored - entries.keys()):
        problems.append(f"{path}: not in SOURCES.json")
    for path, e in sorted(entries.items()):
        f = DATA / path
        if not f.exists():
            problems.append(f"{path}: listed but not stored")
        elif blob_id(f.read_bytes()) != e["blob"]:
            problems.append(f"{path}: blob {blob_id(f.read_bytes())} != recorded {e['blob']}")
    return problems


def from_checkout(checkout: Path, paths: list[str]) -> None:
    entries = {e["path"]: e for e in load()} if SOURCES.exists() else {}
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    for path in paths or sorted(entries):
        commit = entries.get(path, {}).get("commit", head)
        data = subprocess.run(["git", "-C", str(checkout), "show", f"{commit}:{path}"], check=True,
                              capture_output=True).stdout
        out = DATA / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        entries[path] = {"repo": REPO, "path": path, "commit": commit, "blob": blob_id(data), "bytes": len(data)}
    save(list(entries.values()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--from-checkout", type=Path)
    ap.add_argument("--path", action="append", default=[])
    a = ap.parse_args(argv)
    if a.from_checkout:
        from_checkout(a.from_checkout, a.path)
    problems = check()
    for p in problems:
        print(p, file=sys.stderr)
    total = sum(p.stat().st_size for p in DATA.rglob("*.hlo"))
    print(f"{len(load())} files, {total} bytes; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
