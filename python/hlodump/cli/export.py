"""``hlodump export``: a dump's figures in another tool's format.

    hlodump export PATH… --model-explorer DIR [--module M]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import UsageError, add_common, read

__all__ = ["register"]


def _cmd_export(args: argparse.Namespace) -> int:
    from .. import analysis as A
    from ..outputs import model_explorer

    d = read(args.paths, args)
    keys = None
    if args.module is not None:
        from .common import select_module

        keys = [m.key for m in select_module(A._module_list(d), args.module)]
    if not A._module_list(d):
        raise UsageError("nothing to export: no module with HLO text or buffer assignment in "
                         + " ".join(map(str, args.paths)))
    paths = model_explorer.write_node_data(d, args.model_explorer, keys)
    if not paths:
        raise UsageError("nothing to export: no instruction has memory or cost figures in "
                         + " ".join(map(str, args.paths)))
    for p in paths:
        sys.stdout.write(p + "\n")
    return 0


def register(sub: Any) -> None:
    """Add ``export`` to the ``hlodump`` sub-command parser."""
    sp = sub.add_parser("export", help="per-instruction memory and cost as Model Explorer node data (JSON)")
    add_common(sp, json=False)
    sp.add_argument("--model-explorer", required=True, metavar="DIR",
                    help="write DIR/memory_bytes.json, output_bytes.json, flops.json, bytes_accessed.json: Model "
                         "Explorer node data (graph id: the module's name; node: the instruction's name)")
    sp.set_defaults(func=_cmd_export)
