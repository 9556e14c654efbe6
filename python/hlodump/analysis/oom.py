"""Out-of-memory reports pasted from logs (``oom_reports`` / ``oom_buffers``): one summary per
report, for every report of a dump in two queries.

A report states what failed (GPU: the bytes requested; TPU: used vs capacity and by how much it
was exceeded), the memory it had in use by kind (GPU: parameter, output, temp allocations and
fragmentation; TPU: arguments, program, reserved, the program's temporaries padded and unpadded),
and its largest buffers with shape, op_name and source line. All of it is in the tables; this
puts each report's figures together. A report printed twice in one log is listed once,
with ``times_printed`` 2. A paste that lacks part of its report (cut off, or only its tail)
is answered with what it holds, and ``missing`` says what it lacks (the ``missing`` rows of
``oom_reports``).

A buffer of an entry parameter (GPU: ``Entry Parameter Subshape: SHAPE`` instead of an
instruction's ``XLA Label:`` and ``Shape:``) keeps that shape as its ``shape`` and has
``kind`` ``parameter``; other buffers' ``kind`` is the instruction's opcode (GPU) or the
allocation type (TPU).
"""

from __future__ import annotations

from .._typing import checked_analysis

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from .engine import engine

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["oom_summary"]


@checked_analysis
def oom_summary(dump: "Dump", top: int = 10) -> list[dict[str, Any]]:
    """One JSON-ready dict per OOM report of the dump, in file and report order: ``path``,
    ``report_id``, ``backend``, ``memory_space``, ``failed`` (the summary lines: ``requested`` on
    GPU; ``used``, ``capacity``, ``exceeded`` on TPU — bytes, and the text as printed),
    ``figures`` (every other stated figure by section and key), ``buffers`` (the first ``top``
    largest buffers: rank, size_bytes, shape, op_name, source, xla_label, allocation_type),
    ``n_buffers``, ``times_printed`` (a log that prints the same report again gives it once, with
    the count), ``error`` (what the TPU compiler's message names: ``code`` E1000, ``name``
    CompileTimeHbmOom, ``module`` jit_step; E1001: ``allocation``, ``instruction``), ``missing`` (what the paste lacks, in words: ``{"what": "cut off" | "start",
    "text", "line"}``; empty for a whole report)."""
    eng = engine(dump)
    for t in ("files", "oom_reports", "oom_buffers"):
        eng.table(t)
    facts = eng.sql("""
        select r.file_id, f.path::varchar as path, r.report_id, r.backend::varchar as backend,
               r.memory_space::varchar as memory_space, r.section::varchar as section, r.key::varchar as key,
               r.bytes, r.value::varchar as value, r.line
        from oom_reports r join files f using (file_id)
        order by r.file_id, r.report_id, r.line""").fetchall()
    bufs = eng.sql(f"""
        select file_id, report_id, rank, size_bytes, size::varchar as size,
               coalesce(shape, entry_parameter_subshape)::varchar as shape,
               case when entry_parameter_subshape is not null then 'parameter'
                    else coalesce(xla_label, allocation_type) end::varchar as kind,
               op_name::varchar as op_name,
               case when source_file is not null then source_file || coalesce(':' || source_line::varchar, '') end
                   as source,
               xla_label::varchar as xla_label, allocation_type::varchar as allocation_type, line,
               count(*) over (partition by file_id, report_id) as n
        from oom_buffers qualify row_number() over (partition by file_id, report_id order by rank, line) <= {int(top)}
        order by file_id, report_id, rank, line""").fetchall()
    by_report: dict[tuple[int, int], dict[str, Any]] = {}
    for fid, path, rid, backend, space, section, key, nbytes, value, line in facts:
        r = by_report.get((fid, rid))
        if r is None:
            r = by_report[(fid, rid)] = {"path": path, "report_id": rid, "backend": backend, "memory_space": space,
                                         "line": line, "failed": {}, "figures": defaultdict(dict), "buffers": [],
                                         "n_buffers": 0, "times_printed": 1, "missing": [], "error": {}}
        if section == "repeat":  # the same report printed again later in the log
            r["times_printed"] += 1
        elif section == "missing":  # what the paste lacks (cut off, or only the report's tail)
            r["missing"].append({"what": key, "text": value, "line": line})
        elif section == "summary":
            r["failed"][key] = {"bytes": nbytes, "text": value}
        elif section == "error":  # what the error message names: code, name, module (TPU compile)
            r["error"][key] = value
        else:
            r["figures"][section][key] = {"bytes": nbytes, "text": value}
        r["memory_space"] = r["memory_space"] or space
        r["backend"] = r["backend"] or backend
    for fid, rid, rank, size_bytes, size, shape, kind, op_name, source, label, atype, line, n in bufs:
        r = by_report.get((fid, rid))
        if r is None:  # buffers of a report whose header lines were cut off
            r = by_report[(fid, rid)] = {"path": None, "report_id": rid, "backend": None, "memory_space": None,
                                         "line": line, "failed": {}, "figures": defaultdict(dict), "buffers": [],
                                         "n_buffers": 0, "times_printed": 1, "missing": [], "error": {}}
        r["n_buffers"] = int(n)
        r["buffers"].append({"rank": rank, "size_bytes": size_bytes, "size": size, "shape": shape,
                             "kind": kind, "op_name": op_name, "source": source, "xla_label": label,
                             "allocation_type": atype, "line": line})
    out = []
    for key in sorted(by_report):
        r = by_report[key]
        r["figures"] = dict(r["figures"])
        out.append(r)
    return out
