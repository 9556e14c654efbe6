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
    hlodump fit FILE.py:FUNC --target T   will it fit: compile for a TPU/GPU target (no hardware) and
                                          answer the peak against the device's memory (or: fit DUMP…)

Every command takes a dump file of any kind, a dump directory, a glob or several of them, and
``--threads N``, ``--keep-going`` (problems are reported in one line at the end; exit status 1
unless ``--errors-ok``); the memory commands take ``--module`` (key, name, id or substring) and
``--json``. Every problem prints ``hlodump: …`` (never a traceback) and exits with the status of
its kind (``common.EXIT_STATUSES``, shown by ``hlodump --help``): 1 problems in the input
(malformed lines, files that could not be read as a whole), 2 usage and input paths (a missing
path, /dev/null, an unknown module, a bad option), 3 the environment (out of memory, an object
store, an output not writable), 128+N a recorded program killed by signal N.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from .. import cli_safety
from .._version import __version__
from .common import (EXIT_ENVIRONMENT, EXIT_INPUT, EXIT_OK, EXIT_SIGNAL_BASE, EXIT_STATUSES, EXIT_USAGE,
                     FilesFailedError, UsageError, finish)

__all__ = ["main", "run", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from . import cost, data, export, fit, memory, passes, report

    p = argparse.ArgumentParser(prog="hlodump", description="XLA compiler dumps as Arrow tables.",
                                epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"hlodump {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    data.register(sub)
    memory.register(sub)
    cost.register(sub)
    passes.register(sub)
    report.register(sub)
    fit.register(sub)
    export.register(sub)
    return p


_KEEP_GOING_HINT = ("(to read the rest and report every problem: --keep-going; in Python: "
                    "read_arrow(..., on_error=\"collect\"))")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``hlodump`` command: its exit status. Ctrl-C at any point of it (parsing the
    options, reading, a DuckDB query, printing a message) is "hlodump: interrupted", 130."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return _interrupted()


_STOPPED = False  # Ctrl-C ended the command (``run`` then leaves without Python's shutdown)


def run() -> None:
    """The ``hlodump`` program (console script, ``python -m hlodump``): ``main``, then exit.
    After Ctrl-C the process leaves at once (``os._exit`` once the output is flushed): a DuckDB
    query still winding down on its own threads aborted the interpreter's shutdown ("terminate
    called … exception not rethrown", SIGABRT), and object fetches still under way held it."""
    status = main()
    if _STOPPED:
        import os

        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


def _interrupted() -> int:
    import signal

    global _STOPPED
    _STOPPED = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while we say so: no traceback
    try:
        print("hlodump: interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return EXIT_SIGNAL_BASE + 2


def _main(argv: Optional[Sequence[str]] = None) -> int:
    from ..exceptions import (DuplicateFileError, HlodumpError, InputFileError, ParseError, UnsupportedURLError,
                              engine_error)
    from ..io.paths import NothingToReadError
    from ..io.stores import StoreError

    args = build_parser().parse_args(argv)
    try:
        try:
            return finish(args, int(args.func(args) or 0))
        except Exception as e:  # DuckDB's out of memory / interrupt: as Python's own
            plain = engine_error(e)
            if plain is None:
                raise
            raise plain from None
    except BrokenPipeError:  # `hlodump query … | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK
    except UsageError as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return EXIT_USAGE
    except ParseError as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        print(f"hlodump: {_KEEP_GOING_HINT}", file=sys.stderr)
        return EXIT_INPUT
    except FilesFailedError as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        print(f"hlodump: {_KEEP_GOING_HINT}", file=sys.stderr)
        return EXIT_INPUT
    except (InputFileError, DuplicateFileError) as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return EXIT_INPUT
    except (UnsupportedURLError, NothingToReadError) as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as e:
        if "unknown storage option" in str(e) or "storage option" in str(e) and "is not" in str(e):
            print(f"hlodump: {_esc(e)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except (FileNotFoundError, FileExistsError) as e:
        print(f"hlodump: {_esc(_os_text(e))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:  # an output that cannot be written, a disk full …
        print(f"hlodump: {_esc(_os_text(e))}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except MemoryError as e:
        print(f"hlodump: out of memory{': ' + str(e) if str(e) else ''}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except (HlodumpError, ValueError) as e:
        print(f"hlodump: {_esc(e)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return _interrupted()


def _os_text(e: OSError) -> str:
    """An ``OSError`` as ``<file>: <why>``: no ``[Errno N]`` prefix (``[Errno 0]``, ``[Errno None]``)."""
    if e.strerror is None:
        return str(e)
    return f"{e.filename}: {e.strerror}" if e.filename is not None else e.strerror


def _esc(e: "BaseException | str") -> str:
    """An error message as the terminal may show it (file names and SQL carry any bytes; the
    credentials of a URL, ``http://user:password@host``, are never shown)."""
    from ..io.stores import redact

    return cli_safety.escape_controls(redact(str(e)))

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
