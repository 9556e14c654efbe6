"""The module paths of hlodump before its read path and its outputs became packages
(``hlodump.plan`` → ``hlodump.io.plan``, ``hlodump.html_report`` → ``hlodump.outputs.html_report``,
…) stay importable: an import of an old path gives the module at its new one (the same module
object, so ``except hlodump.stores.StoreError`` still catches what ``hlodump.io.stores`` raises)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

#: old name under ``hlodump.`` → new name under ``hlodump.``
MOVED = {
    "plan": "io.plan",
    "paths": "io.paths",
    "stores": "io.stores",
    "progress": "io.progress",
    "html_report": "outputs.html_report",
    "_report_page": "outputs.report_page",
    "plot": "outputs.plot",
    "oom_plot": "outputs.oom_plot",
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        head, _, rest = fullname.partition(".")
        if head == "hlodump" and rest in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module("hlodump." + MOVED[spec.name.partition(".")[2]])

    def exec_module(self, module: ModuleType) -> None:  # the module at the new path is ready
        pass


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
