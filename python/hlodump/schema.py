"""The table contract: every table's Arrow schema and the meaning of each column.

The schemas come from the Rust core (``_core.table_schemas()``, from the ``tables!`` list in
``src/tables.rs``: written once); this module adds what the columns mean. Both the Rust core and
the pure-Python reference parser (``hlodump.reference``) must emit exactly these schemas, with
these row orders and these value conventions; the test suite checks both against this module
and against each other, cell for cell.

General conventions (apply to every table unless a column says otherwise)
-------------------------------------------------------------------------
* ``file_id`` (int32) is the index of the file in the ``files`` table (0 for a single file).
* Rows are in file order (the order in which the text appears), files in ``file_id`` order.
* ``line`` columns are 1-based line numbers; ``column`` columns are 1-based character offsets
  (counted in bytes of the line, 1 = first byte). Both are int32 (issue 26: output size): a
  file of more than 2**31 - 1 lines is refused whole (a ParseError naming the file, in both
  error modes); byte offsets (``instructions.offset``) stay int64.
* Source positions and frame ids the file prints are int32 columns (``source_line``,
  ``end_line``, ``column``, ``end_column``, ``stack_frame_id``, ``defining_source_line``; issue
  26); sizes, byte counts, offsets and the other ids int64. A printed number that does not fit
  its column is an error at its first character (the message says the most it may be), never
  a wrapped value.
* Text columns hold the text *exactly as printed* in the file (a zero-copy view), with two
  exceptions that are decoded: quoted HLO strings listed in FORMATS.md §3.1.4 as "escaped"
  (``op_name``, ``op_type``, ``source_file``, ``custom_call_target``, quoted ``backend_config``,
  ``FileNames``/``FunctionNames`` entries) are C-unescaped, and quotes are removed.
* A trailing ``\\r`` at the end of a line is ignored (CRLF files parse like LF files).
* Files must be UTF-8. A line containing invalid UTF-8 is a parse error at the first bad byte.
* ``str`` columns coming from the file are ``string_view`` as read (``Dump.views``; the tables of
  ``read_arrow(..., string_view=True)``). ``read_arrow``'s default hands each table to pyarrow
  with every text column cast to ``large_string`` (on first access), as
  ``read_arrow(..., string_view=False)`` does when reading. Columns built by us (paths, kinds,
  messages) are ``large_string`` in ``files``/``errors`` (64-bit offsets: error rows quote their
  lines, at most 64 KiB of each, and many of them passed 2 GiB).
* Text columns with few distinct values per file (opcodes, shapes, shape indices, source files
  and functions, op names, kinds, memory spaces …: the columns typed ``D``) are
  dictionary-encoded as read: ``dictionary<int32, large_string>``, int32 keys (null rows null)
  into the distinct strings of the batch (each batch, i.e. each file or group of small files,
  or each ``scan`` batch, carries its own dictionary). 4 bytes a row instead of a 16-byte view.
  ``read_arrow``'s default cast gives ``large_string`` for them like for every text column.
  Chosen per column from the cardinalities of tests/data and the corpus of jax releases:
  dictionary where distinct values are a small share of the rows (or most rows are null)
  and the strings are short; views where strings are mostly unique (names, operand text,
  attributes) or may be huge (``backend_config``: nearly every row is null, but a kernel body
  of megabytes stays a view of the file instead of a copy in a dictionary).
* Shape indices are printed ``{}`` / ``{1}`` / ``{0,2}``; a ``shape_index`` column holds that text,
  or ``""`` (empty, not null) where the file did not print an index.
* Human-readable sizes (``4.00MiB``, ``51.1KiB``, ``576B``) convert to bytes as
  ``round_half_up(decimal * 1024**k)`` computed exactly (integer arithmetic on the digits).
  (Reference parser's reading: a negative size, ``-2.5B``, is rounded on its magnitude, i.e.
  half away from zero: ``-3``; the text is a sign printed before a formatted magnitude.)
* Digit groups separated by single spaces (``97 587 208``) are read as one number.
"""

from __future__ import annotations

import base64
import json
import os

import pyarrow as pa

__all__ = ["SCHEMAS", "TABLE_NAMES", "DOCS", "schema", "doc", "empty_table", "to_large_string_schema"]

# Every table's Arrow schema and doc line, as the Rust core defines them (``src/tables.rs``,
# the ``tables!`` list: the one definition). Below, per table, what its columns mean and the
# decisions both parsers follow; docs/API.md lists the tables for users (a test holds it to
# these schemas). Text columns are ``string_view`` (text from the file, zero-copy),
# ``large_string`` (text we make: paths, kinds, messages) or ``dictionary<int32,
# large_string>`` (text with few distinct values: the columns typed ``D`` below).

#: The core's schemas as last generated (``write_data_file``), for the pure-Python reference
#: without a build; tests/test_api_doc.py holds it equal to the core's.
DATA_FILE = os.path.join(os.path.dirname(__file__), "schemas.json")


def _core_tables() -> list[tuple[str, pa.Schema, str]]:
    try:
        from ._core import table_schemas
    except ImportError:  # the reference alone (no native module built)
        return _data_file_tables()
    return list(table_schemas())


def _data_file_tables() -> list[tuple[str, pa.Schema, str]]:
    with open(DATA_FILE, encoding="utf-8") as f:
        data = json.load(f)
    return [(t["name"], pa.ipc.read_schema(pa.py_buffer(base64.b64decode(t["schema"]))), t["doc"])
            for t in data["tables"]]


def write_data_file(path: str = DATA_FILE) -> None:
    """Write the core's schemas to ``path`` (``schemas.json``: name, doc line, Arrow IPC schema)."""
    from ._core import table_schemas

    tables = [{"name": n, "doc": d, "schema": base64.b64encode(s.serialize().to_pybytes()).decode()}
              for n, s, d in table_schemas()]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"generated_by": "hlodump.schema.write_data_file()", "tables": tables}, f, indent=1)
        f.write("\n")


_TABLES: list[tuple[str, pa.Schema, str]] = _core_tables()

#: Table name → its Arrow schema (names, types, nullability; dictionary or view in the type),
#: in canonical order.
SCHEMAS: dict[str, pa.Schema] = {name: s for name, s, _ in _TABLES}

#: Table name → what a row of it is (one line).
DOCS: dict[str, str] = {name: doc for name, _, doc in _TABLES}

S = pa.string_view()  # text from the mapped file (zero-copy)
T = pa.large_string()  # text we make ourselves (paths, kinds, messages): 64-bit offsets
D = pa.dictionary(pa.int32(), pa.large_string())  # text with few distinct values

# Column notes, table by table (the schemas themselves are in src/tables.rs).
# ---- files
# One row per file seen (a single file: one row, file_id 0). path is as given, or relative to
# the directory that was read (POSIX separators). kind: hlo_module, buffer_assignment,
# buffer_assignment_values, live_range, memory_usage_report, debug_options, other. For the
# name parts see FORMATS.md §1: module_id/module_name from ``module_NNNN.<name>`` (libtpu's
# ``.cl_<build>`` infix dropped); stage is before_optimizations | after_optimizations | pass,
# or a named stage as written (after_codegen, after_optimizations_before_buffer_assignment,
# after_optimizations_after_buffer_assignment, oom_intermediate_module,
# before_config_assignment, after_spmd_partitioner; the analyses read after_optimizations)
# (null for others); a file read into ``options`` whose name says other has kind compile_options,
# proto_text or flagfile (its content); backend e.g. cpu,
# sm_8.0_gpu (null if not in the name); per-pass form 1 fills pass_index, pipeline,
# after_pass, before_pass; form 2 (``NNNN.<pass>.<substep>.txt``) fills pass_index,
# after_pass=<pass>, substep=<substep>. content_kind: what the first non-empty line says
# (same vocabulary as kind, or "unknown" / "empty"); ``parsed`` is true when the file was
# parsed into tables. error: why a file could not be read (null if fine). dump: the dump the
# file belongs to — the directory ``--xla_dump_to`` wrote, found from the file's location,
# or the path a single file was named by (rules: ``hlodump.io.paths.expand_with_dumps``).
# Modules are identified by (dump, module_id, module_name).
# Decisions (name rules in full: reference/files.py docstring = src/files/name.rs module doc):
# - content_kind also takes "stdout_capture" (first line "*** Begin "); it is never "other".
# - Name parts are filled for every kind, "other" included, whenever the suffix is known:
#   ``….before_optimizations.hlo.pb`` / ``.dot`` / ``.html`` get stage (and backend / pass
#   parts) like the .txt; ``.debug_options``, ``.config.pbtxt``, ``.mlir``, ``._fusion.html``,
#   ``.thunk_sequence.txt``, snapshots get module_id/module_name only. Where the module name
#   cannot be separated from a free-form tail (``.ll``, ``.o``, ``.ptx``, unknown suffixes)
#   only module_id is filled. Files with no ``module_NNNN`` in their name (seeds, …) have
#   all parts null — except in a per-module folder (jax >= 0.10:
#   ``module_0024.jit_model/module.mlir``, ``compile_options.textproto``,
#   ``topology.textproto``): a file whose name has no module takes module_id and module_name
#   from the nearest parent folder (in ``path``) named exactly ``module_NNNN[.name]``, so
#   joins by module find it; its kind stays from the name (other) and stage/backend null.
# - parsed is false also for a file that a ``read_arrow(tables=[...])`` skipped (its format
#   produces none of the requested tables); its other columns are as in a full read.
# - module_id needs >= 4 digits after ``module_`` (XLA's %04d); module_name excludes a
#   ``.cl_N`` and is null when XLA dropped it (names > 255 chars) — and, for
#   ``module_<name>.execution_N.hlo_snapshot.pb``, module_id is null and module_name set.
# - backend: the tag in front of ``_after_optimizations`` (``cpu``, ``sm_8.0_gpu``); null for
#   before_optimizations, per-pass files and old ``.after_optimizations`` names without tag.
# - per-pass: the step is the rightmost 4+-digit segment that leaves a valid pass tail (so a
#   module name like ``foo.1234`` stays whole); form 2 leaves pipeline and before_pass null.
# ---- allocations
# One row per ``allocation N: size S<flags>:`` line. flags = the raw text between the size and
# the final ':' (e.g. ", parameter 2, shape |bf16[8]| at ShapeIndex {}"; "" if none).
# parameter/parameter_shape/parameter_shape_index null unless the parameter flag is present;
# output_shape null unless "output shape is |…|" is present. Shapes without the bars.
# page = ``page N`` (XLA 2026, jax >= 0.11; null where not printed): the page of a "multi
# page" buffer assignment (``HloModuleConfig.page_size_kib``), printed when the allocation has
# one (-1 = none is not printed; CPU compiles print page 0 everywhere). It changes neither
# size nor offsets: an allocation is still one block, values at offsets inside it. Flags this
# version does not know (a lower-case word up to the next ", " outside |…|/brackets) keep the
# row, stay in ``flags`` and give one ``notes`` row per file and word.
# ---- assignments
# One row per `` value: <ID NAME[IDX][ (phi)][ @C]> (size=S,offset=O): SHAPE`` line.
# allocation = the index of the enclosing allocation. color = the @C (0 when not printed).
# Decisions (buffer-assignment reference parser, reference/buffer_assignment.py):
# - a value line under an allocation line that could not be read (on_error="collect") is
#   still checked but gives no row (its allocation is unknown).
# ---- values
# One row per value block under ``Used values:``. positions / uses in printed order;
# shape_index (of the value, its positions and uses) "{}" when not printed: XLA prints the index
# of tuple-shaped instructions only, and "{}" is how live_ranges and the peak list spell the whole
# value, so the tables join on one spelling (issue 47). uses empty for " uses:" followed by nothing
# or by "  (none)"; uses_initialized false only for " uses are not initialized yet.".
# defining_instruction = the text after "from instruction:" (one optional space removed),
# up to the end of the line (or, in old XLA where the next "<N …>" header is glued onto the
# same line, up to the start of that header: FORMATS.md does not say so, the 0.4.26 corpus
# does). defining_opcode / defining_op_name / defining_shape / defining_source_file /
# defining_source_line / defining_fusion_kind / defining_custom_call_target: from that text,
# parsed by the HLO instruction parser, each what the same column of ``instructions`` holds
# for that line (null if the text cannot be read). line = the header line.
# Decisions (buffer-assignment reference parser):
# - line = the line on which the header text stands; for a glued old-XLA header that is the
#   previous block's "from instruction:" line.
# - a block cut short (no "from instruction:" before the next header, an empty line, a new
#   section or the end of the file) is an error and gives no row.
# - defining_X (X = opcode, op_name, shape, source_file, source_line, fusion_kind,
#   custom_call_target) = key X of reference.hlo.parse_instruction(defining_instruction);
#   all null if it returns None or raises ValueError.
# - defining_source_file / defining_source_line come from the metadata only (a value's text
#   has no stack-frame tables to resolve stack_frame_id in): they differ from the
#   instructions row of the same name when that row resolved a stack_frame_id.
# - a metadata number out of int32 range (an error and no row in ``instructions``) gives a
#   null defining_source_line and the other columns as parsed.
# ---- schedule
# ``InstructionSequence`` rows: position N and the instruction scheduled there.
# ---- live_ranges
# ``BufferLiveRange`` rows ``NAME{IDX}:start-end``. buffer = NAME{IDX} as printed.
# ---- peak
# ``Live ranges at T (peak):`` rows. New form ``NAME{IDX}: B bytes (cumulative: C bytes)``;
# old form (jax 0.4.26) ``NAME: B bytes`` with no index and no cumulative: there
# shape_index is "" and cumulative_bytes is the running sum of bytes in printed order
# (cumulative_is_printed false).
# Decisions (buffer-assignment reference parser):
# - time = T of the latest "Live ranges at T (peak):" header; the running sum restarts there.
# - the old form may carry an index (NAME{IDX}: B bytes) – accepted, shape_index then filled.
#   Without one the same NAME can appear several times in one list (tuple elements, e.g.
#   arg_tuple.15 in corpus jax-0.4.26/control_flow/module_0000…): rows are not unique by buffer.
# - when the cumulative is printed, cumulative_bytes is the printed number (not recomputed).
# ---- peak_breakdown
# ``Stack trace breakdown for peak usage`` tree, one row per tree line (the header's total
# goes to ``totals``). row = 0-based order within the file's tree; parent_row = row of the
# nearest previous line with depth-1 (null at depth 0). depth per FORMATS.md §2.7.
# Decisions (buffer-assignment reference parser):
# - row numbering runs over the whole file (if a file had two trees, the second continues);
#   depth is from the prefix geometry counted in characters; a line whose depth exceeds the
#   previous line's depth + 1 is an error. total/current/remaining accept "97 587 208" and
#   "97587208"; percent is the printed one-decimal number.
# ---- memory_report
# Memory-usage report rows, every layout (§2.8; parser: reference/memory_report.py).
# row_kind: "allocation" = a row describing one allocation (the allocation list of jax
# 0.4.35–0.9: allocation, size (rounded), cumulative_bytes, percent, remaining_bytes = the
# printed total_size - cumulative_size, flags = the allocation line's raw text after the
# size; offset/used_by_n_values/shapes null; table = rank in the list; color from the flags.
# Also protobuf entries), "offsets" = a row of an offset-group table (the values sharing
# one offset). In the allocation list's "with their values" section a table follows its
# allocation line: allocation and color come from that line, memory_space is null, table
# counts the tables of the section. percent is null where XLA printed nan (total 0).
# totals: key total_bytes_used (the allocation list's first line), rest_allocations and
# rest_percent (its cut-off line, color null).
# Table form (§2.8.1). memory_space/color from the enclosing
# ``Memory Space: NAME (color=C)`` line. table = 0-based index of the allocation table within
# its memory space (the rank that joins to allocations of that color sorted by size desc,
# index asc). cumulative_bytes/size: human-readable figures converted (rounded by XLA!);
# percent = the printed integer percentage. For the protobuf-text form (§2.8.3) one row per
# allocation_entries block: size/cumulative_bytes exact, offset 0, used_by_n_values = number
# of defining_positions, shapes = the positions joined by "; ", allocation = index.
# Decisions (buffer-assignment reference parser):
# - table form: allocation is null (the report does not say which allocation a table
#   describes; join on (color, table) = rank instead). table restarts at 0 for every
#   "Memory Space:" line. A memory space with no tables gives only its totals row.
# - protobuf-text form: memory_space null (no name is printed); color =
#   memory_space_color (0 when omitted, proto3 default); table = 0-based rank of the
#   allocation_entries block within its memory_space_allocation_entries block; allocation =
#   index (0 when omitted); percent null (the proto prints a fraction,
#   cumulative_percentage, not an integer percentage); shapes = defining_positions
#   C-unescaped with quotes removed, joined by "; " ("" when none); line = the line of the
#   entry's "allocation_entries {". Unknown fields are errors.
# size_is_rounded: size was read from HumanReadableNumBytes text with a unit above B
# ("29.49MiB": two decimals, so approximate); false for byte counts and the protobuf form.
# ---- totals
# Every number a dump states about itself that is not a row of another table, one row each:
#   section="buffer_assignment", key="total_bytes_used"      (Total bytes used: N)
#   section="live_range", key="max"                            (HloLiveRange (max N))
#   section="live_range", key="peak_time"                      (Live ranges at T (peak))
#   section="live_range", key="not_available"  value 0         (HloLiveRange not available …)
#   section="live_range", key="peak_unbounded" value 0         (Peak memory could not be …)
#   section="peak_breakdown", key="total"                      (Stack trace breakdown …: N)
#   section="memory_report", key="total_bytes", color=C        (Total bytes: N, per space)
#   section="memory_report", key="rest_values", color=C        (The rest N values …) and
#   section="memory_report", key="rest_percent", color=C       (… less than P% …)
# Decisions (buffer-assignment reference parser):
# - color is null except for the memory_report keys. rest_values and rest_percent share the
#   cut-off line. In the protobuf-text form total_bytes comes from the block's total_bytes
#   field (line of that field; value 0 and the block's first line when omitted).
# - "HloLiveRange not available" is matched as a prefix (the rest of the line is free text).
# ---- heap_trace
# XLA's heap-simulator trace, from the ``buffer_assignment`` of an after-optimizations
# ``HloProto`` (``*.hlo.pb``; docs/protos.md). One row per ``HeapSimulatorTrace.Event``, in
# trace order; ``step`` counts across the traces of the file (one trace per simulated
# allocation, or one for the whole module). kind: alloc / free / share_with (XLA's enum; an
# unknown value as its number). size = the ``LogicalBufferProto`` size of buffer_id (0 if the
# proto lists no such buffer). instruction / computation: the event's names as XLA wrote them.
# share_with: the canonical buffer of a share_with event (null for the others).
# Decisions (both readers): buffer ids are XLA's logical buffer ids, which are the value ids the
# text buffer assignment prints (``assignments.value_id``).
# ---- modules
# One row per ``HloModule`` header. attributes = raw text after "HloModule NAME, " ("" if
# none). entry_computation_layout = the text inside its outer braces (null if absent).
# Decisions (HLO reference parser, reference/hlo.py):
# - name = the header's first token, ending at the first ", " (so dots are kept:
#   ``HloModule my.module.v2``). is_scheduled = the attribute ``is_scheduled=true`` is present.
# - attributes are split with the generic rule of FORMATS.md §3.8.1; a header whose brackets
#   do not balance on its line (``origin_recovery_table={``) is joined with the following
#   lines ("\n" kept in ``attributes``) until they do.
# ---- computations
# One row per computation header. computation_id = 0-based order in the file.
# signature = raw parameter list including the parentheses ("" in short-parsable form);
# result_shape = text after " -> " up to " {" ("" in short form).
# Decisions: rows are emitted for every header at column 0: ``[ENTRY ]%name (sig) -> res {``
# and the sigil-less / signature-less form ``[ENTRY ]name {`` (short-parsable dumps AND all
# default jax 0.4.26 dumps). The closer may be ``}``, ``}, execution_thread="T"`` and/or
# ``} // name`` (0.4.26 prints the latter after fused computations). execution_thread = T
# raw (unescaped text as printed), null when the closer has none.
# ---- instructions
# One row per instruction line (and, with source="value", nothing: values use their own
# columns). See API.md. instruction_id = 0-based order in the file. operands = names
# without '%' (the shape prefix of old XLA dropped; for parameter/constant: []).
# operand_text = the raw text between the opcode's parentheses. attributes = raw text after
# the operand list's ")" with the leading ", " removed ("" if none). called_computations =
# names from calls/to_apply/body/condition/branch_computations/true_computation/
# false_computation/select/scatter/called_computations, in printed order, without '%'.
# op_name/op_type/source_file/source_line/stack_frame_id from metadata={…} (source_line and
# stack_frame_id int32: a number out of int32 range is an error at its first character,
# "metadata number is out of range (at most 2147483647)", and no row);
# source_file/source_line filled from the stack-frame tables when stack_frame_id is set.
# backend_config: raw value (quoted form: unescaped, quotes removed). fusion_kind: kind=.
# Decisions (reference/hlo.py parse_instruction, one parser for module lines and
# ``from instruction:`` text):
# - offset = byte offset of the first byte of the instruction's (first) line, i.e. of its
#   two-space indent. The reference computes it from the raw bytes when parse_module gets
#   them (``data=``); from decoded lines alone it is sum(len(utf8(line)) + 1), exact for LF
#   files without invalid UTF-8 but short by one byte per preceding CRLF line.
# - operands: items of the operand region split at depth-0 commas, ``/*index=N*/`` removed,
#   the old shape prefix dropped (text after the item's last space), '%' removed, a compact
#   tuple path ``#N…`` removed, ``...(+N)`` skipped; [] for parameter and constant.
# - operand_index (list<list<int32>>): per operand its tuple path, ``[]`` for a whole value:
#   ``%arg_tuple.1#2`` (compact tuple operands, XLA 2026, on in dumps by default:
#   ``xla_dump_compact_gte``) → [2], ``%p#0#1`` → [0, 1]: XLA's parser reads each as a
#   get-tuple-element of that element (it names them ``<name>_<i>_<j>``, which no other file
#   uses: the buffer-assignment and live-range files name the compiler's own
#   ``get-tuple-element.N``). At most 9 digits an index; anything else after a name keeps the
#   whole word as the operand.
# - called_computations: only top-level attributes with those keys (not names nested in
#   other values); ``{%a, %b}`` and the generic ``calls=%a, %b`` both give [a, b].
# - a quoted metadata / custom_call_target / backend_config value is unescaped; octal and
#   \xHH escapes yield bytes, decoded as UTF-8 with U+FFFD for invalid sequences. An
#   unquoted value (not expected) is kept raw. backend_config raw ``{…}`` is kept as printed.
# - source_file/source_line/source_function: when stack_frame_id names a StackFrames row the
#   tables win (innermost frame = that row's FileLocations entry; source_function from
#   FunctionNames); otherwise source_file/source_line come from metadata and
#   source_function is null.
# - fusion_kind = the top-level ``kind=`` value (only fusions print one); sharding = the
#   ``sharding=`` value as printed (braces included).
# - Multi-line ``constant(`` literals (hand-written text): following lines are joined while
#   the count of '(' minus ')' from the opcode's '(' stays above 0; line/offset are those of
#   the first line; operand_text/attributes hold the joined text with its "\n"s; reaching
#   the end of the file first is an error.
# - Hand-written text read by the general grammar (FORMATS.md §3.6.1; XLA's lexer reads line
#   breaks and comments as blanks): an instruction may span lines — line = its first line,
#   offset = byte offset of the text it was read from (its line, or the rest of a line after
#   a previous statement or comment), attributes/operand_text/shape = the raw text as
#   written, line breaks, indentation and comments between tokens included (a view into the
#   file), trimmed at both ends.
# - shape = "" when the instruction has no result shape (``ROOT out = add(p0, p1)``: XLA
#   infers it); like computations.signature/result_shape "" when not printed.
# - is_root: the ``ROOT `` prefix. A second ROOT in a computation is an error (the row is
#   still emitted in collect mode); a computation without ROOT is accepted (XLA accepts it).
# ---- stack_frames
# The FileNames/FunctionNames/FileLocations/StackFrames tables joined: one row per
# StackFrames row. parent_frame_id is the *corrected* parent (printed value - 1), null for
# the root (printed 1).
# Decisions: source_line/end_line/column/end_column = the FileLocations row's line,
# end_line, column, end_column (int32: one out of range is an error at its first character,
# "stack-frame table number is out of range (at most 2147483647)"; ids stay int64); file_name/function_name unescaped, null when the id is not in
# its table. line = the StackFrames row's line. Several roots per table do occur (jax 0.10.2
# control_flow/module_0000.jit_rnn.before_optimizations.txt: frames 1-6 all print parent 1).
# ---- custom_calls
# One row per custom-call instruction. body_length = length in bytes of the base64 body
# (backend_config JSON "body" string, else the whole backend_config), decoded_length = its
# decoded size (null if not base64), format: "mlir_bytecode" (decoded starts with ML\xefR),
# "json", "text", "empty"; kernel_name where readable (JSON "kernel_name"/"name").
# Decisions: the "body" key is searched depth-first in printed order (seed 003 nests it as
# ``{"custom_call_config": {"body": …}}``), kernel_name likewise ("kernel_name" first, then
# "name"; string values only). base64 = strict standard alphabet, length % 4 == 0, '=' only
# as padding. format: "empty" when backend_config is null or "" (body_length 0,
# decoded_length null); else "mlir_bytecode" if the decoded body starts with ML\xefR; else
# "json" if the whole config parses as a JSON object with no "body"; else "text" (also a JSON
# object whose body is not MLIR bytecode, and raw non-JSON dicts like ``{index = 0 : ui64}``).
# target = the unescaped custom_call_target ("" if absent).
# ---- thunks
# GPU thunk sequences (§2.11; reference/thunks.py): one row per non-empty line that is not
# a label. kind = the thunk kind (kKernel …), null for text that is not a thunk line (kept
# whole in annotation); annotation = the text after the tab; depth = indent / 2; section =
# the label line (condition, body, branch 0 …) the thunk is under; parent_thunk_id = the
# thunk whose nested sequence this line belongs to. thunk_id = order in the file; printed_id =
# the ``NNN: `` id XLA printed (jax >= 0.8, its ThunkInfo::thunk_id; null before): the key of
# the module's thunk_metadata. instruction = the profile annotation where the line prints it
# (older XLA); jax 0.12 prints none: analysis.thunk_instructions joins thunk_metadata instead.
# ---- thunk_metadata
# One row per top-level ``thunk_metadata { … }`` message of a GPU ``*.thunk_metadata.txt``
# (§2.11; made by the options parser beside that file's options rows, which cannot say which
# fields belong together). thunk_id = thunk_info.thunk_id (null where protobuf omitted it: id 0,
# a thunk made by a thunk pass; or past int64); instruction = thunk_info.profile_annotation (the
# HLO instruction's name; null when not printed); kind = thunk_kind; line = the message's first
# line. A message cut short at the end of the file is an error and no row.
# ---- oom_reports
# XLA's out-of-memory reports (§2.9; reference/oom.py), one row per figure a report states;
# a report printed again in the file is one row, section="repeat", under the report_id of
# its first printing (key "repeats report", bytes null, value its first line from the marker).
# ---- oom_buffers
# One row per buffer / allocation an out-of-memory report lists.
# ---- options
# One row per field of a ``*.debug_options`` file (source "debug_options": the DebugOptions
# fields that differ from their defaults) or a ``compile_options.textproto`` (source
# "compile_options": the whole CompileOptionsProto, jax >= 0.10's per-module folder), or any other
# protobuf text or libtpu flagfile beside a module (source = the file's name: execution_options,
# hlo_module_config, tpu_comp_env, topology, flagfile, autotune_results, … FORMATS.md §1.6.1; a
# field printed by number has its number as key segment; ``[a, b]`` a row per element). key =
# the field's name, nested messages joined by '.' (``executable_build_options.debug_options.
# xla_backend_optimization_level``); a repeated field is a row per element; value = as
# printed, a string without its quotes (XLA does not escape them in *.debug_options: nothing is
# unescaped). Join ``files`` on file_id for the module (module_id, module_name, dump).
# ---- errors
# What on_error="collect" could not read, one row per problem.
# ---- notes
# What a dump prints that this version does not know, inside a line whose structure it does
# (a newer XLA): kind = unknown_flag (an allocation flag; kept in allocations.flags /
# memory_report.flags), … ; token = what it is deduplicated by (the flag's first word); text =
# the unknown text as printed; one row per file, kind and token (the first occurrence: line,
# column). ``strict=True`` makes each an error instead.

TABLE_NAMES: tuple[str, ...] = tuple(SCHEMAS)


def doc(name: str) -> str:
    """What a row of table ``name`` is (its doc line in ``src/tables.rs``)."""
    return DOCS[name]


def schema(name: str, string_view: bool = True) -> pa.Schema:
    """The schema of table ``name`` (``large_string`` text columns if ``string_view`` is false)."""
    s = SCHEMAS[name]
    return s if string_view else to_large_string_schema(s)


def _large(t: pa.DataType) -> pa.DataType:
    if t in (pa.string_view(), pa.string()):
        return pa.large_string()
    if pa.types.is_dictionary(t) and _large(t.value_type) == pa.large_string():
        return pa.large_string()
    if pa.types.is_list(t):
        f = t.value_field
        return pa.list_(f.with_type(_large(f.type)))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_large(t.field(i).type)) for i in range(t.num_fields)])
    return t


def to_large_string_schema(s: pa.Schema) -> pa.Schema:
    """``s`` with every string / string_view / dictionary-encoded text (also nested) replaced by
    ``large_string``."""
    return pa.schema([f.with_type(_large(f.type)) for f in s], metadata=s.metadata)


def empty_table(name: str, string_view: bool = True) -> pa.Table:
    """A table with no rows and the full schema of ``name``."""
    return schema(name, string_view).empty_table()


def type_name(t: pa.DataType) -> str:
    """``t`` as docs/API.md's column reference spells it: ``dict`` for
    ``dictionary<int32, large_string>``, ``list<…>``, ``struct<a: int32, …>``, else Arrow's name."""
    if t == pa.dictionary(pa.int32(), pa.large_string()):
        return "dict"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {type_name(f.type)}" for f in t) + ">"
    return {"bool": "bool", "double": "float64"}.get(str(t), str(t))


def markdown() -> str:
    """The column reference of docs/API.md (its last section), generated from the core's
    schemas; tests/test_api_doc.py holds the file to it. To update it:
    ``python -c "import hlodump.schema as s; print(s.markdown(), end='')"``."""
    import textwrap

    out = []
    for name, s in SCHEMAS.items():
        cols = ", ".join(f"`{f.name}` {type_name(f.type)}{'?' if f.nullable else ''}" for f in s)
        out.append(textwrap.fill(f"**{name}** — {DOCS[name]} {cols}.", 100, break_on_hyphens=False,
                                 break_long_words=False))
    return "\n\n".join(out) + "\n"
