#!/usr/bin/env python3
"""Copy the test sample of XLA dumps (tests/data/corpus/jax-<V>/<program>/) out of full dump
directories, with machine paths neutralised and the bulky repetitive files trimmed.

Usage:
  python3 tools/corpus/sample.py DUMPS OUT [VERSION...] [--gen-dir DIR] [--dry-run]
  python3 tools/corpus/sample.py --programs VERSION       (print the programs the sample needs)

DUMPS    full dumps as make_dumps.sh writes them: DUMPS/jax-<V>/<program>/...
OUT      where the sample goes (tests/data/corpus): OUT/jax-<V>/<program>/ is replaced
VERSION  releases to copy (default: every release of SAMPLE whose DUMPS/jax-<V> exists)
--gen-dir  the directory the generators ran from (the `source_file` of metadata);
           default: tools/corpus/generators next to this script

What is copied (SAMPLE below), per release and program:
  * every file of the modules chosen (all modules unless `modules=` says otherwise), except
  * per-kernel MLIR (`module_NNNN.<name>.<kernel>-{pre-optimization,post-optimization,
    post-lowering}.mlir`, jax 0.6.2-0.9.2): per release only one kernel of each name form
    (`<fusion>_kernel_module`, `wrapped_<op>_kernel_module`, `wrapped_<op>`,
    `__compute_module_wrapped_<op>`), all three stages: in the first program (name order) that has
    per-kernel MLIR, the first kernel of each form (file-name order), if its module is chosen;
  * per-pass dumps (`module_NNNN.<name>.NNNN.<...>.txt`): per module, KEEP_PASSES files spread
    evenly over the pass order (first and last included), after the corpus's own
    `trim_passes.py -8` step (so the same files are chosen from a full or an already trimmed dump);
  * `modules=`: only the modules with these names (and their per-module folders), `last_module`:
    and the program's last module (by number);
    `first_kernel_module`: only the first module (number order) that wrote per-kernel MLIR.
  LLVM IR (`*.ll`) and object files (`*.o`) are never copied.

Producers other than jax (``--producer NAME SRC OUT``: TensorFlow, PyTorch/XLA; one flat dump
directory SRC, module names that may contain dots): every file of every module into OUT/NAME/,
except per-kernel MLIR, of which only the first kernel (file-name order) of each name form is
kept, all three stages; ``--site DIR`` (repeatable) also neutralises that directory (the
producer's site-packages, which TensorFlow's metadata names) to ``/usr/lib/python3/site…/``.

Path neutralisation (the only change made to file contents): every occurrence of the DUMPS
directory (`<DUMPS>/`) and of the generator directory (`<gen-dir>/`) is replaced by a neutral path
of the SAME byte length (`/data/xla_dump/run…/`, `/src/models_gen/corpus_program…/`), so file
sizes, line lengths and columns stay as XLA wrote them (binary .pb files included: their string
lengths do not change). The copy is then checked: no `/work/`, `/root/`, `/tmp/` or `/home/` may
remain in any file (the script stops with the offending file and path otherwise).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# release -> [(program, options)]; options: modules=[names] (every module of these names),
# last_module=True (also the program's last module, whatever its name), first_kernel_module=True
# control_flow: lax.scan RNN and its gradient (while loops, reverse scan), a data-dependent
#   while_loop, cond and switch (and their vmap: select), fori > scan > cond nesting;
# spmd: sharded MLP (all-reduce), shard_map collectives (all-gather, psum, reduce-scatter,
#   partition-id), ppermute / all_to_all, a ppermute ring in a fori_loop, and the pmap module
#   (replica_count=8; pmap__lambda_, later jit_call_wrapped / jit__fun).
CONTROL_FLOW = ("control_flow", {"modules": ["jit_rnn", "jit_rnn_loss", "jit_newton_sqrt", "jit_branches", "jit_nested"]})
SPMD = ("spmd", {"modules": ["jit_mlp_loss", "jit_sm_collectives", "jit_sm_permute", "jit_ring"], "last_module": True})
BASIC = [CONTROL_FLOW, SPMD]
NEW = [CONTROL_FLOW, ("spmd", {}), ("convnet", {"modules": ["jit_loss"]}),
       ("linalg", {"modules": ["jit_solve", "jit_cholesky", "jit_qr", "jit_svd", "jit_eigh"]}),
       ("transformer", {"modules": ["jit_forward"]})]
SAMPLE: dict[str, list[tuple[str, dict]]] = {
    "0.4.13": BASIC,
    "0.4.20": BASIC,
    "0.4.30": BASIC,
    "0.4.35": BASIC,
    "0.4.38": BASIC,
    "0.5.3": BASIC,
    # 0.6.2 writes per-kernel MLIR for scatter kernels only: the one indexing module that has them
    "0.6.2": BASIC + [("indexing", {"first_kernel_module": True})],
    "0.7.2": BASIC,
    # per-pass dumps for one release: the forward module of the transformer
    "0.8.3": BASIC + [("transformer", {"modules": ["jit_forward"]})],
    "0.9.2": BASIC,
    # jax 0.11.2 / 0.12.0.1 (Python >= 3.12): control_flow as BASIC, spmd whole (every named-
    # sharding `mesh[...]` replica-group form: several axes, sub-axes `{'model':(2)2}`), the
    # convnet's training step (convolutions and their gradients), linalg's solve/cholesky/qr/svd/eigh
    # (custom calls, while loops with compact tuple operands), the transformer's forward module
    # with KEEP_PASSES per-pass dumps
    "0.11.2": NEW,
    "0.12.0.1": NEW,
}
# tests/data/proto (`--set proto`): text and binary proto twins of the same compiles
# (make_proto_dumps.sh: --xla_dump_hlo_as_text --xla_dump_hlo_as_proto), three releases
_PROTO = [("control_flow", {"modules": ["jit_rnn", "jit_rnn_loss", "jit_newton_sqrt", "jit_branches", "jit_nested"]}),
          ("spmd", {"modules": ["jit_mlp_loss", "jit_sm_collectives", "jit_sm_permute", "jit_ring"], "last_module": True}),
          ("linalg", {"modules": ["jit_cholesky", "jit_qr"]}),
          ("misc", {"modules": ["jit_update", "jit_mlp", "jit_scoped"]})]
PROTO_SAMPLE: dict[str, list[tuple[str, dict]]] = {
    "0.10.2": _PROTO,
    "0.11.2": _PROTO,
    # + per-pass dumps as text and proto (--xla_dump_hlo_pass_re=.*) and --xla_dump_hlo_to_subfolder
    "0.12.0.1": _PROTO + [("control_flow_passes", {"modules": ["jit_newton_sqrt"]}),
                          ("control_flow_subfolder", {"modules": ["jit_rnn", "jit_branches"]})],
}
SETS = {"corpus": SAMPLE, "proto": PROTO_SAMPLE}

# jax 0.4.26 and 0.10.2 (tests/data/corpus/jax-0.4.26, jax-0.10.2) were sampled earlier and
# differently: transformer, control_flow, spmd, misc whole, every 5th pass dump plus the last
# (generators/trim_passes.py ROOT 5); see tests/data/corpus/README.md. They are not made here.

PASS_FLAGS = {"transformer": "--xla_dump_hlo_pass_re=.*"}
KEEP_PASSES = 4
CORPUS_PASSES = 8  # the corpus kept 8 per module (trim_passes.py -8)

NEUTRAL_DUMPS = ("/data/xla_dump/", "run_b")
NEUTRAL_GEN = ("/src/models_gen/", "corpus_program")
NEUTRAL_SITE = ("/usr/lib/python3/", "site-packages")
FORBIDDEN = (b"/work/", b"/root/", b"/tmp/", b"/home/")

_MODULE = re.compile(r"^module_(\d{4,})\.([A-Za-z0-9_]+)\.")
_PASS = re.compile(r"^module_(\d{4,})\.[A-Za-z0-9_]+\.(\d{4})\..*\.(?:txt|hlo\.pb)$")
_SUBFOLDER = re.compile(r"^[A-Za-z0-9_.-]+_\d+$")  # <host>_<pid> (--xla_dump_hlo_to_subfolder)
_KERNEL = re.compile(r"^module_\d{4,}\.[A-Za-z0-9_]+\.(.+)-(pre-optimization|post-optimization|post-lowering)\.mlir$")
_FOLDER_NEW = re.compile(r"^module_\d{4,}\.([A-Za-z0-9_]+)$")  # jax 0.10.2: module_NNNN.<name>/
_FOLDER_OLD = re.compile(r"^(.+)_(\d{10,})$")  # jax 0.7.2-0.9.2: <name>_<unique id>/


def neutral(original: str, base_filler: tuple[str, str]) -> str:
    """A neutral absolute directory path (ending in '/') of the same byte length as `original`."""
    base, filler = base_filler
    n = len(original.encode())
    if n == len(base):
        return base
    if n >= len(base) + 2:
        return base + filler[: n - len(base) - 1].ljust(n - len(base) - 1, "_") + "/"
    if n >= 3:  # a short original path: /x…x/
        return "/" + "x" * (n - 2) + "/"
    raise SystemExit(f"cannot neutralise a path this short: {original!r}")


def spread(items: list, k: int) -> list:
    """k items spread evenly, first and last included (trim_passes.py with N = -k)."""
    if len(items) <= 1:
        return list(items)
    picks = {round(i * (len(items) - 1) / (k - 1)) for i in range(k)}
    return [x for i, x in enumerate(items) if i in picks]


def _kernel_form(kernel: str) -> str:
    if kernel.startswith("__compute_module_"):
        return "compute-module"  # jax 0.9.2: __compute_module_wrapped_<op>
    if not kernel.endswith("_kernel_module"):
        return "wrapped-op"  # wrapped_scatter (0.6.2 …)
    return "wrapped-kernel" if kernel.startswith("wrapped_") else "fusion-kernel"


def choose(src: str, opts: dict) -> list[str]:
    """Relative paths (POSIX) of the files of one program directory that go into the sample,
    before the per-kernel MLIR choice of `kernel_owners`. Module files are those directly in
    `src` and, with `--xla_dump_hlo_to_subfolder` (jax 0.10+), those in `<name>/<host>_<pid>/`."""
    names = sorted(os.listdir(src))
    files = [n for n in names if os.path.isfile(os.path.join(src, n))]
    folders = [n for n in names if os.path.isdir(os.path.join(src, n))]
    sub = []  # --xla_dump_hlo_to_subfolder: <module name>/<host>_<pid>/module_NNNN.<name>.…
    for d in list(folders):
        if _FOLDER_NEW.match(d) or _FOLDER_OLD.match(d):
            continue
        inner = sorted(os.listdir(os.path.join(src, d)))
        if inner and all(_SUBFOLDER.match(x) and os.path.isdir(os.path.join(src, d, x)) for x in inner):
            for x in inner:
                sub += [f"{d}/{x}/{n}" for n in sorted(os.listdir(os.path.join(src, d, x)))]
            folders.remove(d)
    files = [n for n in files + sub if not n.endswith((".ll", ".o"))]
    base = {n: n.rsplit("/", 1)[-1] for n in files}

    modules = {}  # module id -> name, for the modules taken
    for n in files:
        if m := _MODULE.match(base[n]):
            modules.setdefault(m[1], m[2])
    if "modules" in opts:
        last = max(modules) if opts.get("last_module") else None
        modules = {i: name for i, name in modules.items() if name in opts["modules"] or i == last}
    if opts.get("first_kernel_module"):
        with_kernels = sorted(_MODULE.match(base[n])[1] for n in files if _KERNEL.match(base[n]))
        modules = {i: name for i, name in modules.items() if with_kernels and i == with_kernels[0]}
    if not modules:
        raise SystemExit(f"{src}: no module selected by {opts}")

    keep = [n for n in files if (m := _MODULE.match(base[n])) and m[1] in modules]

    # per-pass dumps: KEEP_PASSES per module, spread over the corpus's CORPUS_PASSES; the text and
    # proto of one pass (`….NNNN.<…>.txt` and `.hlo.pb`) are kept or dropped together
    passes: dict[str, dict[int, list[str]]] = {}
    for n in keep:
        if (m := _PASS.match(base[n])) and not _KERNEL.match(base[n]):
            passes.setdefault(m[1], {}).setdefault(int(m[2]), []).append(n)
    drop = set()
    for by_number in passes.values():
        numbers = sorted(by_number)
        kept = set(spread(spread(numbers, CORPUS_PASSES), KEEP_PASSES))
        drop |= {n for k, ns in by_number.items() if k not in kept for n in ns}
    keep = [n for n in keep if n not in drop]

    # per-module folders
    taken_names = set(modules.values())
    taken_stems = {f"module_{i}.{name}" for i, name in modules.items()}
    for d in folders:
        if d in taken_stems or ((m := _FOLDER_OLD.match(d)) and m[1] in taken_names
                                and not _FOLDER_NEW.match(d)):
            for root, _dirs, fns in os.walk(os.path.join(src, d)):
                for fn in fns:
                    keep.append(os.path.relpath(os.path.join(root, fn), src).replace(os.sep, "/"))
        elif not _FOLDER_NEW.match(d) and not _FOLDER_OLD.match(d):
            raise SystemExit(f"{src}: unexpected folder {d}")
    return sorted(keep)


def kernel_owners(dirs: dict[str, str]) -> set[str]:
    """Stems (`module_NNNN.<name>.<kernel>`) of the per-kernel MLIR kept for a release: in the first
    program (name order) whose directory has per-kernel MLIR, the first kernel (file-name order,
    over all its modules) of each name form. The full corpus was thinned by
    generators/trim_kernel_mlir.py, which keeps the first kernel of each kind in the same order, so
    these files are in a trimmed dump exactly when they are in a fresh one."""
    for program in sorted(dirs):
        kernels = [n for n in sorted(os.listdir(dirs[program])) if _KERNEL.match(n)]
        if kernels:
            owners: dict[str, str] = {}
            for n in kernels:
                owners.setdefault(_kernel_form(_KERNEL.match(n)[1]), _stem(n))
            return set(owners.values())
    return set()


def _stem(kernel_file: str) -> str:
    m = _KERNEL.match(kernel_file)
    return kernel_file[: m.start(2) - 1]


def neutralise(data: bytes, replacements: list[tuple[bytes, bytes]]) -> bytes:
    for old, new in replacements:
        assert len(old) == len(new), (old, new)
        data = data.replace(old, new)
    return data


def copy_program(src: str, dst: str, chosen: list[str], replacements: list[tuple[bytes, bytes]],
                 dry_run: bool = False) -> tuple[int, int]:
    if dry_run:
        return len(chosen), sum(os.path.getsize(os.path.join(src, p)) for p in chosen)
    if os.path.exists(dst):
        shutil.rmtree(dst)
    total = 0
    for rel in chosen:
        with open(os.path.join(src, rel), "rb") as f:
            data = f.read()
        out = neutralise(data, replacements)
        assert len(out) == len(data)
        for bad in FORBIDDEN:
            if bad in out:
                at = out.index(bad)
                raise SystemExit(f"{src}/{rel}: a machine path is left after neutralisation: "
                                 f"{out[at:at + 80]!r}")
        target = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(out)
        total += len(out)
    return len(chosen), total


_STAGE_SUFFIX = ".before_optimizations.txt"
_KERNEL_STAGE = re.compile(r"^(.+)-(pre-optimization|post-optimization|post-lowering)\.mlir$")


def choose_producer(src: str) -> list[str]:
    """Files of a producer's flat dump directory for the sample (see the docstring)."""
    names = sorted(os.listdir(src))
    stems = sorted({n[: -len(_STAGE_SUFFIX)] for n in names if n.endswith(_STAGE_SUFFIX)}, key=len, reverse=True)
    keep, forms = [], {}
    for n in names:
        path = os.path.join(src, n)
        if n.endswith((".ll", ".o")):
            continue
        if os.path.isdir(path):
            for root, _dirs, fns in os.walk(path):
                keep += [os.path.relpath(os.path.join(root, f), src).replace(os.sep, "/") for f in fns]
            continue
        m = _KERNEL_STAGE.match(n)
        stem = next((st for st in stems if n.startswith(st + ".")), None)
        if m and stem:
            kernel = m[1][len(stem) + 1:]
            owner = forms.setdefault(_kernel_form(kernel), m[1])
            if owner != m[1]:
                continue
        keep.append(n)
    return sorted(keep)


def producer_main(a) -> int:
    name, src, out = a.producer
    src = os.path.abspath(src)
    replacements = []
    for original, base in ([(src.rstrip("/") + "/", NEUTRAL_DUMPS),
                            (os.path.abspath(a.gen_dir).rstrip("/") + "/", NEUTRAL_GEN)]
                           + [(os.path.abspath(d).rstrip("/") + "/", NEUTRAL_SITE) for d in a.site]):
        replacements.append((original.encode(), neutral(original, base).encode()))
    # the dump directory itself also appears without its '/' (debug_options: xla_dump_to: "SRC")
    replacements[0] = (replacements[0][0][:-1], replacements[0][1][:-1])
    replacements.sort(key=lambda r: -len(r[0]))
    for old, new in replacements:
        print(f"path {old.decode()} -> {new.decode()}")
    files = choose_producer(src)
    n, size = copy_program(src, os.path.join(out, name), files, replacements, a.dry_run)
    print(f"{name}: {n} files, {size} bytes")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dumps", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("versions", nargs="*")
    ap.add_argument("--gen-dir", default=os.path.join(HERE, "generators"))
    ap.add_argument("--dry-run", action="store_true", help="only print what would be copied")
    ap.add_argument("--programs", metavar="VERSION", help="print the programs of VERSION's sample and exit")
    ap.add_argument("--set", choices=sorted(SETS), default="corpus",
                    help="which sample: corpus (tests/data/corpus) or proto (tests/data/proto)")
    ap.add_argument("--producer", nargs=3, metavar=("NAME", "SRC", "OUT"),
                    help="sample a non-jax producer's flat dump SRC into OUT/NAME")
    ap.add_argument("--site", action="append", default=[], help="(--producer) a site-packages path to neutralise")
    a = ap.parse_args(argv)
    if a.producer:
        return producer_main(a)
    global SAMPLE
    SAMPLE = SETS[a.set]
    if a.programs:
        if a.programs not in SAMPLE:
            print(f"no sample defined for jax {a.programs}", file=sys.stderr)
            return 2
        print(" ".join(p for p, _ in SAMPLE[a.programs]))
        return 0
    if not a.dumps or not a.out:
        ap.error("DUMPS and OUT are required")
    dumps = os.path.abspath(a.dumps)
    versions = a.versions or [v for v in SAMPLE if os.path.isdir(os.path.join(dumps, f"jax-{v}"))]
    replacements = []
    for original, base in ((dumps.rstrip("/") + "/", NEUTRAL_DUMPS),
                           (os.path.abspath(a.gen_dir).rstrip("/") + "/", NEUTRAL_GEN)):
        replacements.append((original.encode(), neutral(original, base).encode()))
    # the longer path first, in case one contains the other
    replacements.sort(key=lambda r: -len(r[0]))
    for old, new in replacements:
        print(f"path {old.decode()} -> {new.decode()}")
    for v in versions:
        if v not in SAMPLE:
            raise SystemExit(f"no sample defined for jax {v}")
        chosen = {}
        for program, opts in SAMPLE[v]:
            src = os.path.join(dumps, f"jax-{v}", program)
            if not os.path.isdir(src):
                raise SystemExit(f"missing {src} (run regenerate.sh for jax {v})")
            chosen[program] = choose(src, opts)
        owners = kernel_owners({p: os.path.join(dumps, f"jax-{v}", p) for p in chosen})
        for program, files in chosen.items():
            files = [f for f in files if not _KERNEL.match(f) or _stem(f) in owners]
            src = os.path.join(dumps, f"jax-{v}", program)
            n, size = copy_program(src, os.path.join(a.out, f"jax-{v}", program), files, replacements, a.dry_run)
            print(f"jax-{v}/{program}: {n} files, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
