"""Optional dependencies: importing one that is missing names the extra that installs it."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["require", "EXTRAS"]

#: The package each optional module comes from (``pip install "hlodump[<extra>]"``).
EXTRAS = {"polars": "polars", "duckdb": "duckdb", "obstore": "cloud", "fsspec": "cloud", "ray": "ray",
          "matplotlib": "plot"}


def require(module: str, what: str) -> Any:
    """``import module``, or ``ModuleNotFoundError`` saying that ``what`` needs it and the
    ``pip install "hlodump[extra]"`` line that installs it (still an ``ImportError``)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        extra = EXTRAS.get(top, top)
        raise ModuleNotFoundError(f"{what} needs {top}, which is not installed: pip install \"hlodump[{extra}]\" "
                                  f"({e})", name=top) from None
