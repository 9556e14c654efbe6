"""The ``hlodump`` command line.

    hlodump tables PATH…                  row counts of every table
    hlodump query PATH… "SQL"             SQL (DuckDB) over all tables (no file access unless
                                          --allow-file-access; see ``hlodump.cli_safety``)
    hlodump convert PATH… OUT             one Parquet file per table (zstd)
    hlodump summary PATH…                 memory summary per module (jax's memory_analysis figures,
                                          peak, timeline, fragmentation, top buffers)
    hlodump plot PATH… -o out.png|html    memory in use vs program order
    hlodump diff A B                      what changed in memory between two compiles
    hlodump cost PATH…                    FLOPs and bytes per instruction (XLA's cost analysis, jax's
                                          cost_analysis() totals), roofline time on --device
    hlodump comms PATH…                   every collective: kind, groups, bytes, async overlap
    hlodump record [-o DIR] -- CMD …      run CMD with XLA dumping its compiles; their summary
    hlodump passes PATH…                  per-pass dumps: what each pass added/removed/changed
                                          (--instruction NAME: its story; --diff PASS)
    hlodump report PATH… -o report.html   one offline HTML page of the whole dump (plotly)

Every command takes a dump file of any kind, a dump directory, a glob or several of them, and
``--threads N``, ``--keep-going`` (problems are reported in one line at the end; exit status 1
unless ``--errors-ok``); the memory commands take ``--module`` (key, name, id or substring) and
``--json``. Mistakes (a missing path, an unknown module, a bad option) print ``hlodump: …`` and
exit with status 2; malformed input exits with status 1; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from .. import __version__, cli_safety
from .common import UsageError, finish

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from . import cost, data, memory, passes, report

    p = argparse.ArgumentParser(prog="hlodump", description="XLA compiler dumps as Arrow tables.")
    p.add_argument("--version", action="version", version=f"hlodump {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    data.register(sub)
    memory.register(sub)
    cost.register(sub)
    passes.register(sub)
    report.register(sub)
    return p


_KEEP_GOING_HINT = ("(to read the rest and report every problem: --keep-going; in Python: "
                    "read_arrow(..., on_error=\"collect\"))")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..exceptions import HlodumpError, ParseError

    args = build_parser().parse_args(argv)
    try:
        return finish(args, int(args.func(args) or 0))
    except BrokenPipeError:  # `hlodump query … | head`: the reader left; not an error
        sys.stderr.close()
        return 0
    except UsageError as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return 2
    except ParseError as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        print(f"hlodump: {_KEEP_GOING_HINT}", file=sys.stderr)
        return 1
    except (FileNotFoundError, FileExistsError) as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return 2
    except (OSError, HlodumpError, ValueError) as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return 1
    except MemoryError as e:
        print(f"hlodump: out of memory: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hlodump: interrupted", file=sys.stderr)
        return 130


def _esc(e: BaseException) -> str:
    """An error message as the terminal may show it (file names and SQL carry any bytes; the
    credentials of a URL, ``http://user:password@host``, are never shown)."""
    from ..stores import redact

    return cli_safety.escape_controls(redact(str(e)))

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
