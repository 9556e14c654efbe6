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
IO_ORDER = ["paths", "inputs", "archives", "progress", "stores", "plan", "failures"]


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


# ------------------------------------------------------------------------------ no circles
#
# Every import of the package, at module level, inside functions and under ``if TYPE_CHECKING:``
# alike (a reader follows each), resolved to the file it names: ``from . import x`` / ``from .x
# import y`` to ``x.py`` or ``x/__init__.py``; ``from . import y`` where ``y`` is no file of the
# package to the package's ``__init__.py`` (its face). The compiled core (``_core``, no source
# here) is no file: ``from ._core import f`` names no file of ours.


def _module_file(parts: list[str]) -> "str | None":
    """The file of module ``parts`` (``["hlodump", "io", "plan"]``) under the package, or None."""
    base = os.path.join(os.path.dirname(PKG), *parts)
    if os.path.isdir(base) and os.path.exists(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py")
    return base + ".py" if os.path.exists(base + ".py") else None


def _all_imports(path: str) -> list[tuple[int, str, str]]:
    """(line, what the import says, the file it names) of every import in ``path`` of a file of
    the package."""
    rel = os.path.relpath(path, os.path.dirname(PKG)).replace(os.sep, "/")
    here = rel[:-len(".py")].split("/")
    pkg = here[:-1]  # the package the file is in (an __init__.py: its own)
    out = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                target = pkg[:len(pkg) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "hlodump":
                target = node.module.split(".")
            else:
                continue
            said = f"from {'.' * node.level}{node.module or ''} import "
            for a in node.names:
                sub = _module_file(target + [a.name])
                f = sub if sub is not None else _module_file(target)
                if f is not None:
                    out.append((node.lineno, said + a.name, f))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "hlodump":
                    f = _module_file(a.name.split("."))
                    if f is not None:
                        out.append((node.lineno, f"import {a.name}", f))
    return out


def _package_files() -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(PKG) for f in fs if f.endswith(".py"))


def _rel(path: str) -> str:
    return os.path.relpath(path, os.path.dirname(PKG)).replace(os.sep, "/")


def test_no_module_imports_the_face_of_a_package_it_is_in() -> None:
    """``hlodump/__init__.py`` (and ``analysis/__init__.py`` …) hand on names of the files below
    them; a file below that took a name from its face (``from .. import read_arrow``, ``from . import
    _core``) would import the file that imports it: a circle. Each takes a name from the file that
    defines it (``from ..reader import read_arrow``, ``from ._core import read``)."""
    bad = []
    for path in _package_files():
        if os.path.basename(path) == "__main__.py":  # run by ``python -m``: no package imports it
            continue
        own = os.path.dirname(path)
        for line, said, f in _all_imports(path):
            if os.path.basename(f) == "__init__.py" and f != path \
                    and (own + os.sep).startswith(os.path.dirname(f) + os.sep) \
                    and not said.startswith("import "):
                name = said.rsplit(" ", 1)[1]
                if _module_file(_rel(os.path.dirname(f)).split("/") + [name]) is None:
                    bad.append(f"{_rel(path)}:{line}: {said} (a name of {_rel(f)})")
    assert not bad, "files that import the face of their own package:\n" + "\n".join(bad)


def test_the_python_side_has_no_import_circle() -> None:
    """No files of ``hlodump`` import each other in a loop, lazy imports and type-only imports
    included (the reference's format modules take ``split_lines`` from ``reference/lines.py``, not
    from the reader that dispatches to them)."""
    graph = {_rel(p): sorted({_rel(f) for _, _, f in _all_imports(p)} - {_rel(p)}) for p in _package_files()}
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    said = [f"circle of {len(c)} files:\n" + "\n".join(f"  {a} -> {b}" for a in c for b in graph[a] if b in c)
            for c in circles]
    assert not circles, "\n".join(said)
