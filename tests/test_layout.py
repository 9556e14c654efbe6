"""The Python side laid out by layer (issue 42): the read path in ``hlodump.io`` with imports one
way and no private names across its files, the outputs in ``hlodump.outputs``, and the module
paths of before still importable (the same module objects)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys

import pytest

import hlodump

PKG = os.path.dirname(hlodump.__file__)
#: the read path, bottom up: a file may import only files before it
IO_ORDER = ["paths", "inputs", "archives", "progress", "stores", "plan"]


def _imports(path: str) -> list[tuple[str, list[str]]]:
    """(module named relative to the package, names) of every ``from .x import …`` in ``path``,
    at module level or inside functions; not the type-only ones (``if TYPE_CHECKING:``, for
    annotations: no import at run time)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = []
    work: list[ast.AST] = [tree]
    while work:
        node = work.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.append((node.module or "", [a.name for a in node.names]))
        work.extend(ast.iter_child_nodes(node))
    return out


@pytest.mark.parametrize("name", IO_ORDER)
def test_read_path_imports_one_way_and_no_private_names(name: str) -> None:
    below = IO_ORDER[:IO_ORDER.index(name)]
    for module, names in _imports(os.path.join(PKG, "io", name + ".py")):
        if module == "" and names:  # from . import x
            targets = names
        else:
            targets = [module.split(".")[0]]
        for t in targets:
            if t in IO_ORDER:
                assert t in below, f"io/{name}.py imports io/{t}.py, which is above it"
        if module.split(".")[0] in IO_ORDER:
            private = [n for n in names if n.startswith("_")]
            assert not private, f"io/{name}.py takes private names of io/{module}.py: {private}"


def test_outputs_and_io_are_packages_with_a_docstring() -> None:
    for pkg in ("hlodump.io", "hlodump.outputs"):
        mod = importlib.import_module(pkg)
        assert mod.__doc__ and len(mod.__doc__.split()) > 5, pkg
    assert not any(os.path.exists(os.path.join(PKG, f + ".py")) for f in
                   ("plan", "paths", "stores", "progress", "html_report", "_report_page", "plot", "oom_plot"))


@pytest.mark.parametrize("old, new", [
    ("hlodump.plan", "hlodump.io.plan"), ("hlodump.paths", "hlodump.io.paths"),
    ("hlodump.stores", "hlodump.io.stores"), ("hlodump.progress", "hlodump.io.progress"),
    ("hlodump.html_report", "hlodump.outputs.html_report"), ("hlodump._report_page", "hlodump.outputs.report_page"),
    ("hlodump.plot", "hlodump.outputs.plot"), ("hlodump.oom_plot", "hlodump.outputs.oom_plot"),
])
def test_old_module_paths_are_the_same_modules(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)


def test_old_paths_in_a_fresh_interpreter() -> None:
    """``except hlodump.stores.StoreError`` and ``from hlodump.paths import WalkLimitError``, as
    code written before the move does, before anything else of hlodump is imported."""
    code = ("import hlodump.stores, hlodump.io.stores as new\n"
            "from hlodump.paths import WalkLimitError\n"
            "from hlodump import plot\n"
            "assert hlodump.stores.StoreError is new.StoreError\n"
            "assert WalkLimitError.__module__ == 'hlodump.io.paths'\n"
            "assert plot.__name__ == 'hlodump.outputs.plot'\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
