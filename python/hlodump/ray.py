"""Ray Data: read dumps as a distributed ``ray.data.Dataset``; convert many dumps to Parquet.

    import hlodump.ray
    ds = hlodump.ray.read_dumps("s3://bucket/runs/", "instructions", columns=["dump", "file_id", "opcode"])
    ds.groupby("opcode").count().show()

The read is planned once, on the driver (the local walk or one listing of the prefix), then
split into **read tasks, one per dump** (``files.dump``: the directory ``--xla_dump_to`` wrote)
— a dump larger than ``target_bytes`` is cut between modules into several tasks. Each task
reads its files with the Rust core (fetching objects from the store itself) and returns plain
``large_string`` columns (``string_view=False``: a block travels between processes, so it
holds its own strings rather than views into the task's input buffers).

Rows carry the **dump** (``dump``, the first column; ``files`` has it already) and a
**file_id that is the file's position in the whole read** — the same as
``hlodump.read_arrow(uri)`` gives — so tables read by different tasks, or by different
``read_dumps`` calls, join on ``file_id`` (or on ``dump`` and ``module_id`` through ``files``).

On a multi-node cluster, give URLs (``s3://`` …) or paths of a file system every node mounts:
each task opens its files where it runs. ``memory://`` is per process: not for Ray.

``convert(src, dst)`` (``hlodump convert SRC DST --engine ray``) reads every dump once, in Ray
tasks (small dumps packed together: about four Ray tasks per CPU of the cluster), and writes every table as Parquet partitioned by table and dump:
``DST/<table>/dump=<dump, percent-encoded>/part-<task>.parquet`` (Hive layout: readers
restore the ``dump`` column from the directory name), DST a local path or an object-store URL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from ._typing import OnError, Source, StorageOptions, check_on_error, check_read_options, renamed_parameter
from .io.paths import MAX_FILES
from .io.plan import Plan, plan_inputs
from .schema import SCHEMAS, schema

if TYPE_CHECKING:  # pragma: no cover
    import ray.data

__all__ = ["read_dumps", "convert", "plan_tasks", "Task", "DEFAULT_TARGET_BYTES"]

#: A dump larger than this is read by several tasks (cut between modules).
DEFAULT_TARGET_BYTES = 256 << 20

_MODULE = re.compile(r"(?:^|/)module_(\d+)[./]")


class Task:
    """One read task: a part of the plan (whole files; one dump, or some of its modules) and
    each file's ``file_id`` in the whole read."""

    def __init__(self, plan: Plan, file_ids: list[int], size: Optional[int] = None) -> None:
        self.plan = plan
        self.file_ids = file_ids
        #: bytes of its files (listed sizes, file sizes)
        self.size = sum(plan.sizes()) if size is None else size

    @property
    def dump(self) -> str:
        return self.plan.inputs[0].dump if self.plan.inputs else ""

    def read(self, tables: Optional[list[str]], on_error: OnError, threads: int = 1,
             string_view: bool = False) -> dict[str, pa.Table]:
        """Read the task's files; each table with ``large_string`` text (or views, to write
        here), the read's file ids and ``dump`` first (``files`` keeps its own)."""
        from .reader import read_plan

        d = read_plan(self.plan, tables, on_error=on_error, string_view=string_view, threads=threads,
                      progress=False)
        files = d["files"]
        local = files.column("file_id").to_pylist()
        if local != list(range(len(local))):  # pragma: no cover - the core numbers files in order
            raise AssertionError("files.file_id is not 0..n-1")
        ids = pa.array(self.file_ids, pa.int32())
        dumps = files.column("dump")
        out = {}
        for name, t in d.items():
            fid = t.column("file_id")
            i = t.schema.get_field_index("file_id")
            t = t.set_column(i, t.schema.field(i), pc.take(ids, fid))
            if name != "files":
                t = t.add_column(0, pa.field("dump", pa.large_string(), nullable=False),
                                 pc.take(dumps.cast(pa.large_string()), fid))
            out[name] = t
        return out


def table_schema(table: str, columns: Optional[Sequence[str]] = None) -> pa.Schema:
    """The schema of ``table`` as ``read_dumps`` returns it (``dump`` first, large strings)."""
    s = schema(table, False)
    if table != "files":
        s = s.insert(0, pa.field("dump", pa.large_string(), nullable=False))
    if columns is not None:
        s = pa.schema([s.field(c) for c in columns])
    return s


def plan_tasks(source: Source, *, storage_options: Optional[StorageOptions] = None, follow_links: bool = False,
               max_files: int = MAX_FILES, target_bytes: int = DEFAULT_TARGET_BYTES) -> list[Task]:
    """Plan ``source`` (anything ``read_arrow`` takes) once and cut it into tasks: one per dump,
    a dump larger than ``target_bytes`` cut between modules."""
    check_read_options("hlodump.ray", follow_links=follow_links, max_files=max_files, storage_options=storage_options)
    plan = plan_inputs(source, follow_links=follow_links, max_files=max_files, storage_options=storage_options)
    sizes = plan.sizes()
    by_dump: dict[str, list[int]] = {}
    for i, inp in enumerate(plan.inputs):
        by_dump.setdefault(inp.dump, []).append(i)
    tasks = []
    for idx in by_dump.values():
        cur: list[int] = []
        cur_bytes = 0
        last_module: Optional[str] = None
        for i in idx:
            m = _MODULE.search(plan.inputs[i].shown)
            module = m.group(1) if m else None
            if cur and cur_bytes >= target_bytes and module != last_module:
                tasks.append(Task(plan.subset(cur), cur, cur_bytes))
                cur, cur_bytes = [], 0
            cur.append(i)
            cur_bytes += sizes[i]
            last_module = module
        if cur:
            tasks.append(Task(plan.subset(cur), cur, cur_bytes))
    return tasks


def _check(table: str, columns: Optional[Sequence[str]], on_error: OnError) -> Optional[list[str]]:
    if not isinstance(table, str):
        raise TypeError(f"hlodump.ray: table must be a table name (str), not {type(table).__name__}")
    if table not in SCHEMAS:
        raise ValueError(f"unknown table {table!r} (tables: {', '.join(SCHEMAS)})")
    check_on_error(on_error)
    if columns is None:
        return None
    cols = list(columns)
    known = table_schema(table).names
    unknown = [c for c in cols if c not in known]
    if unknown:
        raise ValueError(f"unknown columns of {table}: {unknown} (columns: {', '.join(known)})")
    return cols


def _need_ray() -> Any:
    try:
        import ray
    except ImportError:
        from .exceptions import HlodumpError

        raise HlodumpError("hlodump.ray needs Ray: pip install 'hlodump[ray]'") from None
    return ray


def _datasource_class() -> Any:
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata

    class HlodumpDatasource(Datasource):  # type: ignore[misc]
        """A ``ray.data.Datasource`` of one hlodump table: one read task per dump (or module
        group of a big dump); see ``hlodump.ray``."""

        def __init__(self, tasks: list[Task], table: str, columns: Optional[list[str]], on_error: OnError) -> None:
            super().__init__()
            self.tasks, self.table, self.columns, self.on_error = tasks, table, columns, on_error

        def get_name(self) -> str:
            return f"Hlodump[{self.table}]"

        def estimate_inmemory_data_size(self) -> Optional[int]:
            return sum(t.size for t in self.tasks)

        def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                           data_context: Any = None) -> list[Any]:
            out = []
            sch = table_schema(self.table, self.columns)
            for t in self.tasks:
                meta = BlockMetadata(num_rows=None, size_bytes=t.size, exec_stats=None,
                                     input_files=tuple(inp.shown for inp in t.plan.inputs))
                out.append(ReadTask(_reader(t, self.table, self.columns, self.on_error), meta, schema=sch))
            return out

    return HlodumpDatasource


def _reader(task: Task, table: str, columns: Optional[list[str]], on_error: OnError) -> Callable[[], list[pa.Table]]:
    def read() -> list[pa.Table]:
        wanted = None if table in ("files", "errors") else [table]
        t = task.read(wanted, on_error)[table]
        if columns is not None:
            t = t.select(columns)
        return [t]

    return read


@renamed_parameter("uri", "source")
def read_dumps(source: Source, table: str, *, columns: Optional[Sequence[str]] = None,
               storage_options: Optional[StorageOptions] = None, on_error: OnError = "raise",
               follow_links: bool = False, max_files: int = MAX_FILES,
               target_bytes: int = DEFAULT_TARGET_BYTES,
               ray_remote_args: Optional[Mapping[str, Any]] = None,
               concurrency: Optional[int] = None) -> "ray.data.Dataset":
    """One table of the dumps under ``source`` as a ``ray.data.Dataset``.

    Args:
        source: (was ``uri``, still accepted with a ``DeprecationWarning``) anything
            ``hlodump.read_arrow`` takes: a dump directory, a file, a glob, an
            object-store URL (``s3://bucket/runs/``), a list of these.
        table: the table (``instructions``, ``allocations``, ``files`` …; see ``hlodump.schema``).
        columns: only these columns (projected after reading, for now). ``dump`` is the first
            column of every table (``files`` has it in its own place); include it to keep it.
        storage_options: as for ``read_arrow``; also used by every task.
        on_error: ``"raise"`` (a malformed file fails its task and the dataset) or
            ``"collect"`` (problems become rows of the ``errors`` table).
        target_bytes: a dump larger than this is read by several tasks, cut between modules.
        ray_remote_args: passed to ``ray.data.read_datasource``.
        concurrency: passed to ``ray.data.read_datasource``.

    The plan (walk or listing) is made here, on the driver; the files are read by the tasks.
    ``file_id`` is each file's position in the whole read (as ``read_arrow(source)`` numbers
    them), so datasets of several tables join on it.
    """
    _need_ray()
    import ray.data

    cols = _check(table, columns, on_error)
    tasks = plan_tasks(source, storage_options=storage_options, follow_links=follow_links, max_files=max_files,
                       target_bytes=target_bytes)
    datasource = _datasource_class()(tasks, table, cols, on_error)
    return ray.data.read_datasource(datasource, ray_remote_args=dict(ray_remote_args or {}), concurrency=concurrency)


def _partition_dir(dst: str, table: str, dump: str) -> str:
    from .io import stores

    return stores.join(dst, table, "dump=" + quote(dump, safe=""))


def _convert_tasks(tasks: list[tuple[int, Task]], dst: str, storage_options: Optional[dict[str, Any]],
                   on_error: OnError) -> list[tuple[str, str, int]]:
    """Read each task's files and write every table: (table, path, rows) of each file written.
    Task 0 also writes the tables without rows (so that every table has a schema)."""
    from .io import stores
    import pyarrow.parquet as pq

    written = []
    for index, task in tasks:
        for name, t in task.read(None, on_error, string_view=True).items():
            if t.num_rows == 0 and index != 0:
                continue
            t = t.drop_columns(["dump"])  # in the directory name (Hive partitioning)
            path = stores.join(_partition_dir(dst, name, task.dump), f"part-{index:05d}.parquet")
            sink = pa.BufferOutputStream()
            pq.write_table(t, sink, compression="zstd")
            stores.put_bytes(path, sink.getvalue(), storage_options)
            written.append((name, path, t.num_rows))
    return written


def _batches(tasks: list[Task], workers: int, min_bytes: int = 32 << 20) -> list[list[tuple[int, Task]]]:
    """Consecutive tasks packed into Ray tasks of about total / (4 × workers) bytes (at least
    ``min_bytes``): hundreds of small dumps do not cost hundreds of Ray task round trips."""
    total = sum(t.size for t in tasks)
    target = max(total // (4 * max(workers, 1)), min_bytes)
    out: list[list[tuple[int, Task]]] = []
    cur: list[tuple[int, Task]] = []
    cur_bytes = 0
    for i, t in enumerate(tasks):
        if cur and cur_bytes + t.size > target:
            out.append(cur)
            cur, cur_bytes = [], 0
        cur.append((i, t))
        cur_bytes += t.size
    if cur:
        out.append(cur)
    return out


def convert(src: Source, dst: str, *, storage_options: Optional[StorageOptions] = None, on_error: OnError = "raise",
            address: Optional[str] = None, target_bytes: int = DEFAULT_TARGET_BYTES,
            follow_links: bool = False, max_files: int = MAX_FILES) -> list[str]:
    """Convert every dump under ``src`` to Parquet in Ray tasks, partitioned by table and dump:
    ``dst/<table>/dump=<dump>/part-<task>.parquet``; returns one line per table (its directory,
    files and rows). ``address``: the Ray cluster (default: the one ``ray.init()`` finds —
    ``RAY_ADDRESS`` — or a new local one). Tables with no rows get one empty file (their
    schema) in the first task's partition."""
    ray = _need_ray()

    check_on_error(on_error)
    tasks = plan_tasks(src, storage_options=storage_options, follow_links=follow_links, max_files=max_files,
                       target_bytes=target_bytes)
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    run = ray.remote(num_cpus=1)(_convert_tasks)
    opts = dict(storage_options or {})
    workers = int(ray.cluster_resources().get("CPU", 1))
    refs = [run.remote(b, dst, opts, on_error) for b in _batches(tasks, workers)]
    try:
        results = ray.get(refs)
    except ray.exceptions.RayTaskError as e:  # the task's own exception (ParseError, OSError …)
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    per_table: dict[str, list[int]] = {}
    for got in results:
        for name, _, rows in got:
            c = per_table.setdefault(name, [0, 0])
            c[0] += 1
            c[1] += rows
    from .io import stores

    return [f"{stores.join(dst, name)}/  ({per_table[name][0]:,} files, {per_table[name][1]:,} rows)"
            for name in SCHEMAS if name in per_table]
