"""XLA's out-of-memory report (FORMATS.md §2.9): the Rust core and the reference parser on
reports modelled on real pastes (tests/data/oom/README.md), and on variants of them."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from hlodump import _core
from hlodump.exceptions import ParseError
from hlodump.reference import oom
from hlodump.reference.reader import FileContext, split_lines

DATA = Path(__file__).parent / "data" / "oom"
TABLES = ["oom_reports", "oom_buffers", "errors", "notes"]
GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10


class _Sink:
    def __init__(self, on_error: str, strict: bool = False) -> None:
        self.on_error = on_error
        self.strict = strict
        self.notes_seen: set[Any] = set()
        self.rows: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.rows[table].append(row)


# The tests below that look for cut-off errors read in strict mode (``strict=True``): by default
# a cut-off paste is answered with what it holds and a note (``test_cut_off_paste_is_a_note``).
def rust(path: Path, on_error: str = "collect", strict: bool = True) -> dict[str, list[dict[str, Any]]]:
    out = _core.read([(str(path), str(path), True, None)], tables=TABLES, on_error=on_error, strict=strict)
    return {t: out[t].to_pylist() for t in TABLES}


def reference(path: Path, on_error: str = "collect", strict: bool = True) -> dict[str, list[dict[str, Any]]]:
    sink = _Sink(on_error, strict)
    ctx = FileContext(0, str(path), sink)  # type: ignore[arg-type]
    oom.parse(split_lines(path.read_bytes(), ctx, lone_cr=True), ctx)
    cols = {t: [f.name for f in _core.read([(str(path), str(path), True, None)], tables=TABLES, on_error="collect")[t].schema] for t in TABLES}
    return {t: [{c: r.get(c) for c in cols[t]} for r in sink.rows[t]] for t in TABLES}


def both(path: Path, strict: bool = True) -> dict[str, list[dict[str, Any]]]:
    """Rust's rows, after checking that the reference gives the same, cell for cell."""
    r, ref = rust(path, strict=strict), reference(path, strict=strict)
    for t in TABLES:
        assert r[t] == ref[t], t
    return r


def figures(rows: dict[str, list[dict[str, Any]]], section: str, report: int = 0) -> dict[str, int | None]:
    return {f["key"]: f["bytes"] for f in rows["oom_reports"] if f["section"] == section and f["report_id"] == report}


ALL = sorted(DATA.glob("*.log"))


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_rust_equals_reference(path: Path) -> None:
    both(path)
    both(path, strict=False)
    assert _core.sniff(path.read_bytes()) == "oom_report"


def test_gpu_glog_printed_twice() -> None:
    rows = both(DATA / "gpu_glog_twice.log")
    assert rows["errors"] == []
    assert {r["report_id"] for r in rows["oom_reports"]} == {0}
    stats = figures(rows, "stats")
    assert stats == {"parameter allocation": 6 * MiB, "constant allocation": 0, "maybe_live_out allocation": 6 * MiB,
                     "preallocated temp allocation": 0, "total allocation": 12 * MiB, "total fragmentation": 0}
    parts = ["parameter allocation", "constant allocation", "maybe_live_out allocation", "preallocated temp allocation"]
    assert sum(stats[k] or 0 for k in parts) == stats["total allocation"]
    assert figures(rows, "summary") == {"requested": 6291456}
    bufs = rows["oom_buffers"]
    assert [b["rank"] for b in bufs] == [1, 2, 3]
    assert [b["size_bytes"] for b in bufs] == [6 * MiB, 384 * KiB, 384 * KiB]
    assert bufs[0]["shape"] == "f32[4096,128,3]" and bufs[0]["xla_label"] == "concatenate"
    assert bufs[0]["op_name"] == "jit(concatenate)/jit(main)/concatenate[dimension=0]"
    assert bufs[0]["source_line"] == 689
    assert bufs[1]["entry_parameter_subshape"] == "f32[256,128,3]" and bufs[1]["shape"] is None
    # f32[4096,128,3] is 6 MiB: the size matches the shape.
    assert 4096 * 128 * 3 * 4 == bufs[0]["size_bytes"]


def test_gpu_ray_prefixes_and_tabs() -> None:
    rows = both(DATA / "gpu_ray_tabs.log")
    assert rows["errors"] == []
    stats = figures(rows, "stats")
    assert stats["preallocated temp fragmentation"] == 0
    assert stats["total fragmentation"] == 5632
    # parameter + maybe_live_out + temp = total, to the rounding of the printed sizes.
    total = stats["parameter allocation"] + stats["maybe_live_out allocation"] + stats["preallocated temp allocation"]
    assert abs(total - stats["total allocation"]) < 0.01 * GiB
    bufs = rows["oom_buffers"]
    assert [(b["rank"], b["xla_label"], b["shape"]) for b in bufs] == [(1, "convert", "f32[250880,4096]"), (2, None, None)]
    assert bufs[0]["size_bytes"] == round(3.83 * GiB)
    assert bufs[1]["entry_parameter_subshape"] == "bf16[250880,4096]"


def test_gpu_rocm() -> None:
    rows = both(DATA / "gpu_rocm.log")
    assert rows["errors"] == []
    bufs = rows["oom_buffers"]
    assert [b["size_bytes"] for b in bufs] == [2 * GiB, GiB, GiB]
    assert 16384 * 32768 * 4 == bufs[0]["size_bytes"]
    assert bufs[0]["op_type"] == "dot_general" and bufs[0]["source_file"] == "/work/step.py"
    assert bufs[2]["shape"] == "(f32[16384,16384], s8[0])"
    assert figures(rows, "summary") == {"requested": 2 * GiB}
    stats = figures(rows, "stats")
    assert stats["constant allocation"] == 256 and stats["total fragmentation"] == 64 * KiB


def test_gpu_cut_off_is_an_error_not_a_buffer() -> None:
    path = DATA / "gpu_elixir_cut.log"
    rows = both(path)
    assert [b["rank"] for b in rows["oom_buffers"]] == [1]
    assert rows["oom_buffers"][0]["entry_parameter_subshape"] == "f32[29491200]"
    assert [(e["line"], e["message"].split(":")[0]) for e in rows["errors"]] == [
        (20, "out-of-memory report cut off by the end of the file")]
    with pytest.raises(ParseError):
        _core.read([(str(path), str(path), True, None)], tables=TABLES, strict=True)
    with pytest.raises(ParseError):
        reference(path, on_error="raise")


def test_tpu_report() -> None:
    rows = both(DATA / "tpu_jax.log")
    assert rows["errors"] == []
    assert {r["memory_space"] for r in rows["oom_reports"]} == {"hbm"}
    assert {r["backend"] for r in rows["oom_reports"]} == {"tpu"}
    s = figures(rows, "summary")
    assert s == {"used": round(30.21 * GiB), "capacity": round(15.48 * GiB), "exceeded": round(14.73 * GiB)}
    u = figures(rows, "total_usage")
    assert abs(u["reserved"] + u["program"] + u["arguments"] - u["total"]) < 0.01 * GiB
    assert abs(s["used"] - s["capacity"] - s["exceeded"]) < 0.01 * GiB
    p = figures(rows, "program_requirement")
    assert p["global"] == 481 * KiB and p["HLO temp unpadded"] == round(14.25 * GiB)
    assert figures(rows, "output") == {"output size": KiB, "shared with arguments": 0}
    bufs = rows["oom_buffers"]
    assert [(b["rank"], b["size_bytes"], b["unpadded_size_bytes"], b["padding_bytes"]) for b in bufs] == [
        (1, round(1.46 * GiB), round(1.46 * GiB), None), (2, 4 * GiB, GiB, 3 * GiB)]
    assert bufs[1]["size_bytes"] == bufs[1]["unpadded_size_bytes"] + bufs[1]["padding_bytes"]
    assert bufs[1]["padding"] == "3.00G (4.0x expansion)"
    assert bufs[0]["shape"] == "bf16[256000,3072]{1,0:T(8,128)(2,1)}"
    assert bufs[0]["xla_label"] == "convert.15982 = convert(param.72)"
    assert bufs[0]["allocation_type"] == "HLO temp" and bufs[0]["source_line"] == 3


def test_tpu_old_tensorflow_form() -> None:
    rows = both(DATA / "tpu_tf_glog.log")
    assert rows["errors"] == []
    assert figures(rows, "total_usage")["arguments"] is None
    assert figures(rows, "output") == {"output size": None}
    p = figures(rows, "program_requirement")
    assert p["HLO temp fragmentation"] == round(293.84 * MiB) and "HLO temp unpadded" not in p
    (b,) = rows["oom_buffers"]
    # s32[8388608,8,4] is exactly 1 GiB: TPU units are binary.
    assert b["unpadded_size_bytes"] == 8388608 * 8 * 4 * 4 == GiB
    assert b["size_bytes"] == 32 * GiB and b["padding_bytes"] == 31 * GiB
    assert b["op_type"] == "FloorMod" and b["op_name"] == "slicewise_79/cic_update/FloorMod"


def test_tpu_prefix_on_every_line() -> None:
    rows = both(DATA / "tpu_every_line_prefixed.log")
    assert rows["errors"] == []
    (b,) = rows["oom_buffers"]
    assert b["size_bytes"] == 6 * GiB and b["unpadded_size_bytes"] == 12582912 * 4 == 48 * MiB


def test_tpu_without_first_line_reindented() -> None:
    rows = both(DATA / "tpu_no_first_line.log")
    assert rows["errors"] == []
    assert figures(rows, "summary") == {}
    assert {r["memory_space"] for r in rows["oom_reports"]} == {"hbm"}
    bufs = rows["oom_buffers"]
    # f32[29184,2,2560] = 597 688 320 bytes = 570.00 MiB (decimal units would print 597.69M).
    assert [b["size_bytes"] for b in bufs] == [570 * MiB, 570 * MiB] and 29184 * 2 * 2560 * 4 == 570 * MiB
    assert bufs[1]["unpadded_size_bytes"] + bufs[1]["padding_bytes"] == bufs[1]["size_bytes"]


def test_tpu_cut_after_total_usage() -> None:
    rows = both(DATA / "tpu_cut.log")
    assert figures(rows, "summary")["exceeded"] == round(6.47 * GiB)
    assert rows["oom_buffers"] == []
    assert [(e["line"], e["column"]) for e in rows["errors"]] == [(9, 5)]
    assert rows["errors"][0]["message"].startswith("out-of-memory report cut off: expected")


# ---------------------------------------------------------------------------------- variants


def _variant(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_tabs_and_spaces_and_prefixes_give_the_same_rows(tmp_path: Path) -> None:
    base = (DATA / "gpu_rocm.log").read_text()
    want = both(DATA / "gpu_rocm.log")
    spaces = base.replace("\t", "        ")
    glog = "".join(f"E0502 10:11:12.350001  4242 gpu_executable.cc:1] {line}\n" for line in base.splitlines())
    ray = "".join(f"\x1b[36m(RayWorker pid=123, ip=10.0.0.1)\x1b[0m {line}\n" for line in base.splitlines())
    pylog = "".join(f"ERROR:absl:{line}\n" for line in base.splitlines())
    crlf = base.replace("\n", "\r\n")
    quoted = "".join(f"> {line}\n" for line in base.splitlines())  # quoted in a GitHub reply
    nested = "".join(f"> >{line}\n" for line in base.splitlines())
    for name, text in [("spaces", spaces), ("glog", glog), ("ray", ray), ("pylog", pylog), ("crlf", crlf),
                       ("quoted", quoted), ("nested", nested)]:
        got = both(_variant(tmp_path, name + ".log", text))
        for t in ("oom_buffers", "oom_reports"):
            assert [{k: v for k, v in r.items() if k != "line"} for r in got[t]] == \
                [{k: v for k, v in r.items() if k != "line"} for r in want[t]], name
        assert got["errors"] == []


def test_two_different_reports_are_two(tmp_path: Path) -> None:
    text = (DATA / "gpu_rocm.log").read_text() + (DATA / "tpu_jax.log").read_text() + \
        (DATA / "gpu_rocm.log").read_text()
    rows = both(_variant(tmp_path, "two.log", text))
    assert sorted({(r["report_id"], r["backend"]) for r in rows["oom_reports"]}) == [(0, "gpu"), (1, "tpu")]
    assert [b["report_id"] for b in rows["oom_buffers"]] == [0, 0, 0, 1, 1]


def test_tpu_twice_is_once(tmp_path: Path) -> None:
    one = (DATA / "tpu_jax.log").read_text()
    logged = "".join(f"E0421 01:02:03.456789  777 pjrt.cc:1] {line}\n" for line in one.splitlines())
    rows = both(_variant(tmp_path, "twice.log", logged + "Traceback (most recent call last):\n" + one))
    assert {r["report_id"] for r in rows["oom_reports"]} == {0}
    assert len(rows["oom_buffers"]) == 2


@pytest.mark.parametrize("cut", range(1, 31))
def test_every_cut_gives_no_invented_buffer(tmp_path: Path, cut: int) -> None:
    lines = (DATA / "tpu_jax.log").read_text().splitlines(keepends=True)
    rows = both(_variant(tmp_path, "cut.log", "".join(lines[:cut])))
    complete = sum(1 for i, l in enumerate(lines[:cut]) if l.strip().startswith("====="))
    assert len(rows["oom_buffers"]) == complete
    last = [l.strip() for l in lines[:cut] if l.strip()][-1]
    may_end = last.startswith(("=====", "Largest program allocations", "jaxlib."))
    assert bool(rows["errors"]) != may_end, cut


def test_malformed_size_is_reported_at_its_column(tmp_path: Path) -> None:
    text = (DATA / "gpu_rocm.log").read_text().replace("Size: 1.00GiB\n\t\tEntry", "Size: 1.00XiB\n\t\tEntry")
    rows = both(_variant(tmp_path, "bad.log", text))
    assert [b["rank"] for b in rows["oom_buffers"]] == [1, 3]
    (e,) = rows["errors"]
    assert e["line"] == 20 and e["column"] == 9 and "expected the size" in e["message"]


# ------------------------------------------------------------- logs as a terminal shows them


def _word_wrap(line: str, width: int) -> list[str]:
    """``line`` broken at spaces into pieces of at most ``width`` characters (the space at each
    break is lost), as a page or an e-mail client wraps long lines."""
    out, cur = [], ""
    for word in line.split(" "):
        if cur and len(cur) + 1 + len(word) > width:
            out.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return out + [cur]


def _wrap_operators(text: str, wrap) -> str:
    out = []
    for line in text.split("\n"):
        out.extend(wrap(line) if "Operator: " in line else [line])
    return "\n".join(out)


def test_complete_report_gives_every_buffer() -> None:
    """The printer's own layout (BufferAssignment::ToVerboseString: a tab before `Buffer N:`,
    two before its fields): five buffers, each a row, with the figures the shapes imply."""
    rows = both(DATA / "gpu_five_buffers.log")
    assert rows["errors"] == []
    bufs = rows["oom_buffers"]
    assert [b["rank"] for b in bufs] == [1, 2, 3, 4, 5]
    assert [b["line"] for b in bufs] == [13, 20, 27, 32, 37]
    # sizes are HumanReadableNumBytes of the shapes' bytes (to its 2 decimals)
    for b in bufs:
        dims = [int(d) for d in (b["shape"] or b["entry_parameter_subshape"]).split("[")[1].rstrip("]").split(",")]
        exact = (4 if (b["shape"] or b["entry_parameter_subshape"]).startswith("f32") else 2)
        for d in dims:
            exact *= d
        assert abs(b["size_bytes"] - exact) <= 0.005 * (1 << 30), b["rank"]
    assert bufs[0]["source_line"] == 175 and bufs[4]["op_type"] == "mul"
    assert figures(rows, "summary") == {"requested": 2110783616}


@pytest.mark.parametrize("width", [60, 80, 100])
def test_word_wrapped_operator_lines_are_joined_back(tmp_path: Path, width: int) -> None:
    base = (DATA / "gpu_five_buffers.log").read_text()
    want = both(DATA / "gpu_five_buffers.log")
    wrapped = _wrap_operators(base, lambda l: _word_wrap(l, width))
    assert wrapped.count("\n") > base.count("\n") + 3
    got = both(_variant(tmp_path, "wrapped.log", wrapped))
    assert got["errors"] == []
    keep = lambda r: {k: v for k, v in r.items() if k != "line"}  # noqa: E731
    assert [keep(b) for b in got["oom_buffers"]] == [keep(b) for b in want["oom_buffers"]]


@pytest.mark.parametrize("width", [23, 57, 80])
def test_char_wrapped_operator_lines_keep_every_buffer(tmp_path: Path, width: int) -> None:
    """A terminal's wrap cuts at a fixed column, inside words and keys: every buffer is still a
    row, with its source line (a cut inside a quoted value is joined with a space: both
    readings parse, FORMATS.md §2.9.1)."""
    base = (DATA / "gpu_five_buffers.log").read_text()
    wrapped = _wrap_operators(base, lambda l: [l[i:i + width] for i in range(0, len(l), width)])
    got = both(_variant(tmp_path, "chars.log", wrapped))
    assert got["errors"] == []
    bufs = got["oom_buffers"]
    assert [b["rank"] for b in bufs] == [1, 2, 3, 4, 5]
    assert [b["source_line"] for b in bufs] == [175, 175, None, None, 180]


def test_foreign_line_inside_a_buffer_is_an_error_and_later_buffers_stay(tmp_path: Path) -> None:
    lines = (DATA / "gpu_five_buffers.log").read_text().split("\n")
    at = lines.index("\t\tXLA Label: custom-call")
    glog = "I0528 07:02:44.351000   27490 other_thread.cc:12] "
    lines.insert(at, glog + "something else")
    rows = both(_variant(tmp_path, "interleaved.log", "\n".join(lines)))
    assert [b["rank"] for b in rows["oom_buffers"]] == [2, 3, 4, 5]
    (e,) = rows["errors"]
    # at the line's content (after its log prefix), as every cut-off error
    assert (e["line"], e["column"]) == (at + 1, len(glog) + 1) and e["message"].startswith("out-of-memory report cut off")
    assert "I0528" in e["text"]


def test_several_foreign_lines_inside_a_buffer(tmp_path: Path) -> None:
    """A traceback printed into the middle of buffer 2: one error at its first line, buffer 2
    gives no row, buffers 1 and 3-5 do; a report after it is read as usual."""
    lines = (DATA / "gpu_five_buffers.log").read_text().split("\n")
    at = lines.index("\t\tXLA Label: fusion")
    lines[at:at] = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>', "    step()"]
    text = "\n".join(lines) + (DATA / "gpu_rocm.log").read_text()
    rows = both(_variant(tmp_path, "traceback.log", text))
    assert [(b["report_id"], b["rank"]) for b in rows["oom_buffers"]] == [(0, 1), (0, 3), (0, 4), (0, 5), (1, 1), (1, 2), (1, 3)]
    assert [(e["line"], e["column"]) for e in rows["errors"]] == [(at + 1, 1)]
    assert figures(rows, "summary", report=1) == {"requested": 2 * GiB}


def test_unjoinable_wrap_is_an_error_at_its_line(tmp_path: Path) -> None:
    lines = (DATA / "gpu_five_buffers.log").read_text().split("\n")
    at = next(i for i, l in enumerate(lines) if "Operator: " in l) + 1
    lines.insert(at, "precision=None (this is not a KEY=VALUE list")
    rows = both(_variant(tmp_path, "badwrap.log", "\n".join(lines)))
    assert [b["rank"] for b in rows["oom_buffers"]] == [2, 3, 4, 5]
    assert [(e["line"], e["column"]) for e in rows["errors"]] == [(at + 1, 1)]


def _progress(n: int) -> str:
    """A tqdm-style progress bar redrawn with lone CRs on one line of the file."""
    return "".join(f"\r{k * 10:3d}%|{'#' * k}{' ' * (10 - k)}| {k}/{n}" for k in range(n + 1))


def test_lone_cr_progress_bars_do_not_fail_a_log(tmp_path: Path) -> None:
    base = (DATA / "gpu_five_buffers.log").read_text()
    want = both(DATA / "gpu_five_buffers.log")
    # a progress bar line before the report, and one redrawn over the start of the log line
    lines = base.split("\n")
    text = "\n".join([_progress(10)] + lines[:1] + [_progress(3) + "\r" + lines[1]] + lines[2:])
    path = _variant(tmp_path, "progress.log", text)
    got = both(path)
    assert got["errors"] == []
    assert [b["rank"] for b in got["oom_buffers"]] == [1, 2, 3, 4, 5]
    # line numbers are the file's: one more line (the progress bar) than the report alone
    assert [b["line"] for b in got["oom_buffers"]] == [b["line"] + 1 for b in want["oom_buffers"]]
    assert figures(got, "summary") == {"requested": 2110783616}
    # strict mode reads it too
    _core.read([(str(path), str(path), True, None)], tables=TABLES)


def test_lone_cr_error_columns_count_on_the_real_line(tmp_path: Path) -> None:
    text = (DATA / "gpu_rocm.log").read_text().replace("Size: 1.00GiB\n\t\tEntry", "Size: 1.00XiB\n\t\tEntry")
    lines = text.split("\n")
    at = next(i for i, l in enumerate(lines) if "1.00XiB" in l)
    lines[at] = "\r\r" + lines[at]  # a tool that redraws before printing
    rows = both(_variant(tmp_path, "cr_bad.log", "\n".join(lines)))
    (e,) = rows["errors"]
    assert (e["line"], e["column"]) == (at + 1, 2 + len("\t\tSize: ") + 1)
    assert e["text"] == lines[at]


def test_lone_cr_stays_an_error_for_formats_xla_writes(tmp_path: Path) -> None:
    p = _variant(tmp_path, "m.hlo.txt", "HloModule m\r\rENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    out = _core.read([(str(p), str(p), True, None)], tables=["errors"], on_error="collect")
    assert "lone CR" in out["errors"].to_pylist()[0]["message"]


def test_repeated_report_is_a_row_naming_the_first() -> None:
    rows = both(DATA / "gpu_glog_twice.log")
    (rep,) = [r for r in rows["oom_reports"] if r["section"] == "repeat"]
    assert (rep["report_id"], rep["key"], rep["line"], rep["bytes"]) == (0, "repeats report", 34, None)
    assert rep["value"] == "BufferAssignment OOM Debugging."


def test_endless_continuation_lines_stop_being_joined(tmp_path: Path) -> None:
    """A wrapped Operator: takes at most 64 lines (16 KiB): a file of endless KEY=VALUE lines
    after one is read in linear time, with the cut-off error at the first line not joined."""
    lines = (DATA / "gpu_five_buffers.log").read_text().split("\n")
    at = next(i for i, l in enumerate(lines) if "Operator: " in l) + 1
    lines[at:at] = ["k=v"] * 5000
    rows = both(_variant(tmp_path, "endless.log", "\n".join(lines)))
    assert [(e["line"], e["column"]) for e in rows["errors"]] == [(at + 64 + 1, 1)]
    assert [b["rank"] for b in rows["oom_buffers"]] == [2, 3, 4, 5]


# ------------------------------------------------------- pastes as they come (issue 40, item 3)


def test_cut_off_paste_is_a_note_with_what_is_there() -> None:
    """By default a cut-off report gives what it holds, a ``missing`` row and a note (no error,
    no exception in raise mode); strict mode keeps the error (tests above)."""
    path = DATA / "gpu_elixir_cut.log"
    rows = both(path, strict=False)
    assert rows["errors"] == []
    assert [b["rank"] for b in rows["oom_buffers"]] == [1]
    (n,) = rows["notes"]
    assert (n["kind"], n["line"]) == ("oom_report_cut_off", 20)
    assert n["message"].startswith("out-of-memory report cut off by the end of the file")
    (m,) = [r for r in rows["oom_reports"] if r["section"] == "missing"]
    assert (m["key"], m["line"], m["value"]) == ("cut off", 20, n["message"])
    assert figures(rows, "summary") == {"requested": 117964800}
    _core.read([(str(path), str(path), True, None)], tables=TABLES)  # raise mode: no exception
    reference(path, on_error="raise", strict=False)


def test_cut_off_notes_once_per_place(tmp_path: Path) -> None:
    """Two foreign lines that cut two buffers: two notes (one per place), every later buffer."""
    lines = (DATA / "gpu_five_buffers.log").read_text().split("\n")
    a = lines.index("\t\tXLA Label: custom-call")
    lines.insert(a, "I0528 07:02:44.351000   27490 other.cc:12] one")
    b = lines.index("\t\tEntry Parameter Subshape: f32[16,319,2048]")
    lines.insert(b, "I0528 07:02:44.351000   27490 other.cc:12] two")
    rows = both(_variant(tmp_path, "two_cuts.log", "\n".join(lines)), strict=False)
    assert rows["errors"] == [] and [n["line"] for n in rows["notes"]] == [a + 1, b + 1]
    assert [b["rank"] for b in rows["oom_buffers"]] == [2, 3, 5]


def test_worker_prefixed_lines() -> None:
    """Ray's newer prefixes — ``(raylet, ip=…)``, ``(TrainWorker pid=…, ip=…)``, torch's
    ``[rank0]:`` — and Ray's ``[repeated 2x across cluster]`` suffix."""
    rows = both(DATA / "gpu_ray_worker_prefixes.log", strict=False)
    assert rows["errors"] == [] and rows["notes"] == []
    assert [(b["rank"], b["size_bytes"]) for b in rows["oom_buffers"]] == [(1, 4 * GiB), (2, 2 * GiB), (3, 2 * GiB)]
    assert figures(rows, "summary") == {"requested": 4 * GiB}
    assert figures(rows, "stats")["total allocation"] == 12 * GiB


def test_tail_only_gpu_paste() -> None:
    """A paste that starts inside buffer 2 and is cut in buffer 5: buffers 3 and 4, and what is
    missing at both ends."""
    rows = both(DATA / "gpu_tail_only.log", strict=False)
    assert rows["errors"] == []
    assert [b["rank"] for b in rows["oom_buffers"]] == [3, 4]
    assert rows["oom_buffers"][0]["entry_parameter_subshape"] == "f32[4096,4096]"
    missing = [(r["key"], r["line"]) for r in rows["oom_reports"] if r["section"] == "missing"]
    assert missing == [("start", 2), ("cut off", 19)]
    assert {r["backend"] for r in rows["oom_reports"]} == {"gpu"}
    assert [n["line"] for n in rows["notes"]] == [19]
    assert _core.sniff((DATA / "gpu_tail_only.log").read_bytes()) == "oom_report"


def test_tail_only_tpu_paste() -> None:
    rows = both(DATA / "tpu_tail_only.log", strict=False)
    assert rows["errors"] == [] and rows["notes"] == []
    assert [(b["rank"], b["size_bytes"]) for b in rows["oom_buffers"]] == [(3, 512 * MiB), (4, 256 * MiB)]
    (m,) = [r for r in rows["oom_reports"] if r["section"] == "missing"]
    assert m["key"] == "start" and "allocation list" in m["value"]


def test_stray_report_words_give_no_report(tmp_path: Path) -> None:
    """A log line that looks like the inside of a report, with nothing of a report after it,
    gives no row and no note."""
    text = "starting\nPeak buffers:\nBuffer 3:\nsomething else\n\tXLA Label: fusion\ndone\n"
    rows = both(_variant(tmp_path, "stray.log", text), strict=False)
    assert rows == {t: [] for t in TABLES}


def test_platform_allocator_request_is_the_failed_request(tmp_path: Path) -> None:
    """ROCm (and CUDA without the BFC allocator): ``Failed to allocate request for 154.06GiB
    (165420646400B) on device ordinal 0`` is the request that failed."""
    rows = both(DATA / "gpu_rocm_platform_allocator.log", strict=False)
    assert rows["errors"] == [] and rows["notes"] == []
    (req,) = [r for r in rows["oom_reports"] if r["section"] == "summary"]
    assert (req["key"], req["bytes"], req["value"], req["line"]) == ("requested", 165420646400,
                                                                      "154.06GiB (165420646400B)", 1)
    # on the marker's line too (a one-line exception message)
    one = "RESOURCE_EXHAUSTED: Failed to allocate request for 2.00GiB (2147483648B) on device ordinal 3 " \
          "BufferAssignment OOM Debugging.\n" + "".join((DATA / "gpu_rocm.log").read_text().splitlines(True)[3:])
    rows = both(_variant(tmp_path, "one.log", one), strict=False)
    assert figures(rows, "summary") == {"requested": 2 * GiB}


def test_tpu_vmem_summary_line(tmp_path: Path) -> None:
    text = ("JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on "
            "stack for %k.18 = bf16[2048,4096]{1,0:T(8,128)(2,1)} custom-call(%a, %b)\n")
    rows = both(_variant(tmp_path, "vmem.log", text), strict=False)
    assert rows["errors"] == [] and rows["oom_reports"] == []  # no figure stated: nothing to give


def test_tpu_one_line_messages() -> None:
    """The TPU runtime's and compiler's one-line messages (XLA's E0100, E0101, E1000): one report
    each, with the request and what was free / available."""
    rows = both(DATA / "tpu_runtime_one_line.log", strict=False)
    assert rows["errors"] == [] and rows["notes"] == [] and rows["oom_buffers"] == []
    assert figures(rows, "summary", 0) == {"requested": 8 * MiB, "free": round(6.43 * MiB)}
    assert figures(rows, "summary", 1) == {"requested": round(29.49 * GiB), "free": round(147.64 * MiB), "reserved": 0,
                                           "reservable": round(147.64 * MiB)}
    assert figures(rows, "summary", 2) == {"required": round(3.84 * 1024 * GiB), "available": round(90.96 * GiB)}
    assert {r["backend"] for r in rows["oom_reports"]} == {"tpu"}


def test_newer_xla_states_the_request_rounded(tmp_path: Path) -> None:
    """Newer XLA: ``Out of memory while trying to allocate 101.99MiB.`` (rounded, no byte count)."""
    lines = (DATA / "gpu_rocm.log").read_text().splitlines(True)
    text = "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 101.99MiB.\n" + \
        "".join(lines[2:])
    rows = both(_variant(tmp_path, "rounded.log", text), strict=False)
    (req,) = [r for r in rows["oom_reports"] if r["section"] == "summary"]
    assert (req["bytes"], req["value"]) == (round(101.99 * MiB), "101.99MiB")
