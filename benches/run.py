#!/usr/bin/env python3
"""Measure hlodump against its floor (wc -l, memchr), XLA's parser and the reference parser.

Run ``python benches/make_inputs.py [--scale full]`` first, then ``python benches/run.py``.
Prints one table and writes ``benches/out/results.json``.

Method
* Page cache warm: every input is read once (``cat > /dev/null``) before its measurements.
* Every measurement runs in a fresh Python subprocess (``run.py --child``), so the peak-memory
  readings (VmHWM from /proc/self/status) belong to that one read. Times are the best of
  ``--repeat`` subprocesses (default 3 at small scale, 2 at full); memory is from the last.
* hlodump: ``hlodump.read_arrow(paths, threads=1)`` and ``threads=None`` (all cores), wall time
  of the call (includes the Python edge and pyarrow import of the tables, not interpreter start,
  nor pyarrow's one-time import of pandas, which it does when the first tables arrive).
* Arrow bytes: every buffer of every column chunk of every table (``Array.buffers()``, children
  included), de-duplicated by address, *excluding* buffers that lie inside a file-backed memory
  mapping of an input (the string_view data buffers that are windows of the mapped file). What
  remains is views + offsets + validity + numbers + owned side buffers + (for small files, which
  are read into arenas rather than mapped) the arena copies of the input; the arena part is also
  reported on its own.
* Kept after del: RssAnon after every table was asked for (``read_arrow``'s default large_string
  copies made) and the Dump dropped (``del``, ``gc.collect()``), less base; "(of)" is what the
  tables held then. The target: ≤ 10%.
* RssAnon is read after the read with the tables alive, VmHWM at the same time (it includes the
  mapped file pages that were touched: RssFile). base = RssAnon of the same child just before the
  read (interpreter + pyarrow + hlodump imported).
* XLA: ``jaxlib._hlo.hlo_module_from_text(text)``, the text already in memory, only the parse
  timed; HLO inputs only. Reference: ``hlodump.reference.read_arrow``. Both are measured on a
  smaller slice of the same generator when the input is big (column "on"), and the speed ratio is
  computed from MB/s: an extrapolation that assumes linear scaling (XLA is in fact slower per MB
  on bigger modules, so the ratio against the big file is, if anything, understated).
* Projected: ``read_arrow(paths, threads=1, tables=[T], columns={T: [two columns]})`` — the fast
  path of a user who wants two columns of the biggest table (``PROJECTED``): the grammar still
  checks every line, only the columns are not built.
* Output ratio: Arrow bytes (as above, the zero-copy views form ``d.views``) over input bytes,
  in total and per table (``results.json`` ``table_bytes``; printed below the main table).
* wc -l: wall time of ``wc -l FILES`` (subprocess). memchr: ``benches/driver`` counting ``\\n``
  over a memory map on one thread (built with cargo if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MB = 1_000_000


# ------------------------------------------------------------------------------ child side


from procstatus import mapped_ranges, status, union_len  # noqa: E402 (benches run as scripts)




def arrow_bytes(dump, paths: list[str]) -> dict:
    import pyarrow as pa

    ranges = mapped_ranges(paths)
    seen: dict[int, int] = {}
    text_data: dict[int, int] = {}
    per_table: dict[str, int] = {}
    mapped = 0
    for name in dump.keys():
        before = dict(seen)
        for col in dump[name].columns:
            for chunk in col.chunks:
                bufs = chunk.buffers()
                if pa.types.is_dictionary(chunk.type):  # buffers() gives the keys only
                    bufs = bufs + chunk.dictionary.buffers()
                is_view = pa.types.is_string_view(chunk.type)
                for i, b in enumerate(bufs):
                    if b is None or b.address in seen:
                        continue
                    seen[b.address] = b.size
                    if any(lo <= b.address < hi for lo, hi in ranges):
                        mapped += b.size
                        seen[b.address] = -1
                    elif is_view and i >= 2:
                        text_data[b.address] = b.size
                # nested string_view columns (lists of strings): their data buffers
                if not is_view and pa.types.is_list(chunk.type) and pa.types.is_string_view(chunk.type.value_type):
                    vb = chunk.values.buffers()
                    for b in vb[2:]:
                        if b is not None and seen.get(b.address, 0) >= 0 and not any(lo <= b.address < hi for lo, hi in ranges):
                            text_data[b.address] = b.size
        # (a copy of a small input read into memory is the input's, not this table's)
        per_table[name] = union_len([(a, n) for a, n in seen.items()
                                     if n > 0 and a not in before and text_data.get(a, 0) < (1 << 20)])
    own = union_len([(a, s) for a, s in seen.items() if s > 0])
    # input copies (files read into memory, arenas of small files): owned text buffers of at
    # least 1 MB (side buffers are small). Inputs > 2 GiB are exposed as overlapping windows,
    # so lengths are counted as the union of address ranges, never per buffer.
    arena = union_len([(a, s) for a, s in text_data.items() if s >= (1 << 20)])
    return {"arrow_bytes": own, "arena_bytes": arena, "mapped_bytes": mapped, "table_bytes": per_table}




def child(spec: dict) -> dict:
    kind, paths = spec["kind"], spec["paths"]
    if spec.get("address_space"):
        # the 10 GB case: the read must fit a 16 GB address space (the file is mapped, the
        # tables are built beside it)
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (spec["address_space"], spec["address_space"]))
    if kind == "hlodump":
        import pyarrow  # noqa: F401  (import cost outside the timing)
        import hlodump

        try:  # pyarrow imports pandas (0.3-0.7 s here) when the first tables arrive: not ours
            import pandas  # noqa: F401
        except ImportError:
            pass

        base = status()
        t0 = time.perf_counter()
        d = hlodump.read_arrow(paths if len(paths) > 1 else paths[0], threads=spec["threads"], progress=False,
                               tables=spec.get("tables"), columns=spec.get("columns"))
        dt = time.perf_counter() - t0
        st = status()
        rows = {k: d.views[k].num_rows for k in d.keys()}  # the views: no large_string cast
        res = {"seconds": dt, "rows": sum(rows.values()), "errors": rows.get("errors", 0), "table_rows": rows,
               "base_anon": base["RssAnon"], **st, **arrow_bytes(d.views, spec.get("files", paths))}
        # memory given back: every table asked for (the default large_string copies made), then
        # dropped, as a notebook that re-reads a dump does
        import gc

        for name in d.keys():
            d[name]
        res["accessed_anon"] = status()["RssAnon"]
        del d
        gc.collect()
        res["kept_anon"] = status()["RssAnon"]
        return res
    if kind == "reference":
        import hlodump.reference as ref

        t0 = time.perf_counter()
        d = ref.read_arrow(paths if len(paths) > 1 else paths[0])
        dt = time.perf_counter() - t0
        return {"seconds": dt, "rows": sum(d.views[k].num_rows for k in d.keys()), **status()}
    if kind == "xla":
        from jaxlib import _hlo

        texts = [Path(p).read_text() for p in paths]
        t0 = time.perf_counter()
        for t in texts:
            _hlo.hlo_module_from_text(t)
        dt = time.perf_counter() - t0
        return {"seconds": dt, **status()}
    raise ValueError(kind)


# ------------------------------------------------------------------------------ parent side


def files_of(p: Path) -> list[str]:
    if p.is_dir():
        return sorted(str(f) for f in p.iterdir() if f.is_file())
    return [str(p)]


def size_of(paths: list[str]) -> int:
    return sum(os.path.getsize(p) for p in paths)


def warm(paths: list[str]) -> None:
    for i in range(0, len(paths), 500):
        subprocess.run(["cat", *paths[i : i + 500]], stdout=subprocess.DEVNULL, check=True)


def run_child(spec: dict, repeat: int, timeout: float) -> dict | None:
    best = None
    for _ in range(repeat):
        try:
            r = subprocess.run([sys.executable, __file__, "--child", "-"], input=json.dumps(spec),
                               capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return {"timeout": timeout}
        if r.returncode != 0:
            return {"failed": r.stderr.strip().splitlines()[-1:] or ["?"]}
        res = json.loads(r.stdout.strip().splitlines()[-1])
        if best is None or res["seconds"] < best["seconds"]:
            best = {**res}
        else:
            best.update({k: v for k, v in res.items() if k != "seconds"})
    return best


def time_cmd(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def driver() -> str | None:
    exe = ROOT / "target" / "release" / "hlodump-bench"
    if not exe.exists() and shutil.which("cargo"):
        env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "target")}
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=HERE / "driver", env=env)
    return str(exe) if exe.exists() else None


def memchr_time(exe: str | None, paths: list[str], repeat: int) -> float | None:
    if exe is None:
        return None
    best = float("inf")
    for _ in range(repeat):
        r = subprocess.run([exe, "count", *paths], capture_output=True, text=True, check=True)
        best = min(best, json.loads(r.stdout)["seconds"])
    return best


# (row name, input, format, reference slice, XLA slice). Slices: None = the input itself.
ROWS = [
    ("hlo_1g", "hlo_1g.txt", "hlo", "hlo_20m.txt", "hlo_100m.txt"),
    ("hlo_4g", "hlo_4g.txt", "hlo", "hlo_20m.txt", "hlo_100m.txt"),
    ("hlo_customcall_100m", "hlo_customcall_100m.txt", "hlo", None, None),
    ("hlo_mixed_1g (4 sources)", "hlo_mixed_1g.txt", "hlo", "hlo_mixed_20m.txt", "hlo_mixed_20m.txt"),
    ("hlo_10g (AS ≤ 16 GB)", "hlo_10g.txt", "hlo", "hlo_mixed_20m.txt", "hlo_mixed_20m.txt"),
    ("ba_combined_1g", "ba_combined_1g.txt", "ba", "ba_combined_20m.txt", None),
    ("ba_combined_4g", "ba_combined_4g.txt", "ba", "ba_combined_20m.txt", None),
    ("ba_split_1g (4 files)", "ba_split_1g", "ba", "ba_split_20m", None),
    ("passes (per-pass HLO dir)", "passes", "hlo", "passes[:100]", "passes[:100]"),
]


# The projected read of each format: two columns of its biggest table.
PROJECTED = {"hlo": ("instructions", ["name", "opcode"]), "ba": ("assignments", ["allocation", "size"])}


def resolve(out: Path, spec: str | None, default: list[str]) -> list[str]:
    if spec is None:
        return default
    if spec.endswith("]"):
        name, _, sl = spec.partition("[:")
        return files_of(out / name)[: int(sl[:-1])]
    return files_of(out / spec)


def mbps(nbytes: int, seconds: float | None) -> float | None:
    return nbytes / MB / seconds if seconds else None


def fmt(v, spec="{:.0f}", none="–"):
    return none if v is None else spec.format(v)


def mark(ok) -> str:
    return "·" if ok is None else ("✓" if ok else "✗")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--no-xla", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--child")
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(sys.stdin.read() if a.child == "-" else a.child))))
        return 0

    out = Path(a.out)
    manifest = json.loads((out / "inputs.json").read_text())
    scale = manifest.get("scale", "small")
    repeat = a.repeat or (3 if scale == "small" else 2)
    exe = driver()
    try:
        import jaxlib._hlo  # noqa: F401

        have_xla = not a.no_xla
    except ImportError:
        have_xla = False
    ncpu = os.cpu_count() or 1
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    results = []
    for name, inp, fmt_, ref_spec, xla_spec in ROWS:
        if a.only and not any(o in name for o in a.only):
            continue
        if not (out / inp).exists():
            print(f"skip {name}: {out / inp} missing", file=sys.stderr)
            continue
        paths = files_of(out / inp)
        n = size_of(paths)
        print(f"… {name} ({n / MB:.0f} MB, {len(paths)} files)", file=sys.stderr, flush=True)
        warm(paths)
        r: dict = {"name": name, "format": fmt_, "files": len(paths), "bytes": n}
        r["wc_s"] = time_cmd(["wc", "-l", *paths], repeat)
        r["memchr_s"] = memchr_time(exe, paths, repeat)
        hl_paths = [str(out / inp)] if (out / inp).is_dir() else paths
        limit = {"address_space": 16 * 1024**3} if "10g" in name else {}
        for th, key in ((1, "t1"), (None, "tall")):
            res = run_child({"kind": "hlodump", "paths": hl_paths, "threads": th, "files": paths, **limit},
                            repeat, a.timeout)
            r[key] = res
        table, cols = PROJECTED[fmt_]
        r["proj1"] = run_child({"kind": "hlodump", "paths": hl_paths, "threads": 1, "files": paths,
                                "tables": [table], "columns": {table: cols}}, repeat, a.timeout)
        if have_xla and fmt_ == "hlo":
            xp = resolve(out, xla_spec, paths)
            warm(xp)
            r["xla"] = {**(run_child({"kind": "xla", "paths": xp}, 1, a.timeout) or {}), "bytes": size_of(xp),
                        "on": xla_spec or "itself"}
        if not a.no_reference:
            rp = resolve(out, ref_spec, paths)
            if all(os.path.exists(p) for p in rp):
                warm(rp)
                r["reference"] = {**(run_child({"kind": "reference", "paths": rp}, 1, a.timeout) or {}),
                                  "bytes": size_of(rp), "on": ref_spec or "itself"}
        results.append(r)
        (out / "results.partial.json").write_text(json.dumps(results, indent=2))

    load_after = Path("/proc/loadavg").read_text().split()[:3]
    hlo_landed = any(r["format"] == "hlo" and (r["t1"] or {}).get("table_rows", {}).get("instructions", 0) > 0
                     for r in results)
    table = render(results, ncpu, hlo_landed)
    print(table)
    print(f"scale={scale}, cores={ncpu}, loadavg before {' '.join(load_before)}, after {' '.join(load_after)}")
    (out / "results.json").write_text(json.dumps({
        "scale": scale, "cores": ncpu, "loadavg_before": load_before, "loadavg_after": load_after,
        "hlo_parser_landed": hlo_landed, "rows": results, "table": table,
    }, indent=2))
    return 0


def render(results: list[dict], ncpu: int, hlo_landed: bool) -> str:
    head = ("| input | MB | wc -l MB/s | memchr MB/s | hlodump 1t MB/s | hlodump {n}t MB/s | {n}t/1t | vs wc -l "
            "| XLA MB/s (on) | ×XLA | ref MB/s (on) | ×ref | VmHWM MB | RssAnon MB (base) | kept after del MB (of) | Arrow MB (input copy) "
            "| proj 1t MB/s | Arrow/input "
            "| ≥1GB/s/core | ≥2GB/s/core proj | {n}t≥1.8× | ≥¼ wc | ≥40×XLA | ≥100×ref | RssAnon≤Arrow+100MB "
            "| kept≤10% | HLO Arrow≤1.0× | 4GB≤4s |").format(n=ncpu)
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for r in results:
        n = r["bytes"]
        t1, ta = r.get("t1") or {}, r.get("tall") or {}
        s1, sa = t1.get("seconds"), ta.get("seconds")
        m1, ma = mbps(n, s1), mbps(n, sa)
        wc = mbps(n, r["wc_s"])
        mc = mbps(n, r.get("memchr_s"))
        x = r.get("xla") or {}
        xm = mbps(x.get("bytes", 0), x.get("seconds"))
        rf = r.get("reference") or {}
        rm = mbps(rf.get("bytes", 0), rf.get("seconds"))
        stub = r["format"] == "hlo" and not hlo_landed
        note = " †" if stub else ""
        anon, base = ta.get("RssAnon"), ta.get("base_anon")
        arrow, arena = ta.get("arrow_bytes"), ta.get("arena_bytes")
        per_core = None if r["format"] not in ("hlo", "ba") or m1 is None else m1 >= 1000
        mp = mbps(n, (r.get("proj1") or {}).get("seconds"))
        ratio = arrow / n if arrow is not None else None
        # resident after del, over what the tables (every one asked for) held
        kept = (ta["kept_anon"] - base) if ("kept_anon" in ta and base is not None) else None
        held = (ta["accessed_anon"] - base) if kept is not None else None
        scale2 = (ma / m1) if (m1 and ma) else None
        ok = {
            "core": per_core,
            "proj": None if mp is None else mp >= 2000,
            "par": None if scale2 is None else scale2 >= 1.8,
            "wc": None if (ma is None or wc is None) else ma >= wc / 4,
            "xla": None if (xm is None or ma is None) else ma >= 40 * xm,
            "ref": None if (rm is None or ma is None) else ma >= 100 * rm,
            "mem": None if (anon is None or arrow is None) else anon <= arrow + 100 * MB,
            "kept": None if kept is None else kept <= 0.10 * held,
            "ratio": None if (ratio is None or r["format"] != "hlo") else ratio <= 1.0,
            "4g": (sa <= 4.0) if ("4g" in r["name"] and sa is not None) else None,
        }
        if stub:
            ok.update(core=None, wc=None, xla=None, ref=None, **{"4g": None})
        lines.append("| " + " | ".join([
            r["name"] + note,
            fmt(n / MB),
            fmt(wc),
            fmt(mc),
            fmt(m1) + ("" if not t1.get("failed") and not t1.get("timeout") else " (failed)"),
            fmt(ma),
            fmt(scale2, "{:.2f}×"),
            fmt(ma / wc if (ma and wc) else None, "{:.2f}"),
            f"{fmt(xm, '{:.1f}')} ({x.get('on', '–')})" if x else "–",
            fmt(ma / xm if (ma and xm) else None, "{:.0f}×"),
            f"{fmt(rm, '{:.2f}')} ({rf.get('on', '–')})" if rf else "–",
            fmt(ma / rm if (ma and rm) else None, "{:.0f}×"),
            fmt(ta.get("VmHWM", 0) / MB if ta else None),
            f"{fmt(anon / MB if anon else None)} ({fmt(base / MB if base else None)})",
            f"{fmt(kept / MB if kept is not None else None)} ({fmt(held / MB if held is not None else None)})",
            f"{fmt(arrow / MB if arrow is not None else None, '{:.1f}')} ({fmt(arena / MB if arena is not None else None)})",
            fmt(mp),
            fmt(ratio, "{:.2f}×"),
            *[mark(ok[k]) for k in ("core", "proj", "par", "wc", "xla", "ref", "mem", "kept", "ratio", "4g")],
        ]) + " |")
    lines += ["", "Arrow bytes / input bytes per table (views form, full read on all cores; input copies of "
              "small files not counted):", ""]
    names: list[str] = []
    for r in results:
        for t, b in ((r.get("tall") or {}).get("table_bytes") or {}).items():
            if b and t not in names:
                names.append(t)
    lines.append("| input | " + " | ".join(names) + " |")
    lines.append("|" + "|".join(["---"] * (len(names) + 1)) + "|")
    for r in results:
        tb = (r.get("tall") or {}).get("table_bytes") or {}
        lines.append("| " + r["name"] + " | " + " | ".join(fmt(tb.get(t, 0) / r["bytes"], "{:.3f}") for t in names) + " |")
    if not hlo_landed:
        lines.append("")
        lines.append("† the Rust HLO parser has not landed yet (`src/hlo/mod.rs` is a placeholder): hlodump "
                     "only classifies, sniffs and maps these files, so their hlodump speeds are not parse "
                     "speeds and their speed targets are not judged (·).")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
