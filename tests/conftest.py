"""Shared fixtures.

``reader`` is parametrized over the implementations that read dump files: ``"reference"``
(the pure-Python ``hlodump.reference.read_arrow``) and ``"rust"`` (``hlodump.read_arrow``, backed by
the native module ``hlodump._core``; skipped when that module is not importable). Tests that take
``reader`` therefore run once per implementation and must hold for both.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Tests import the *installed* package (`pip install -e .` builds hlodump._core into python/);
# with PYTHONPATH=python the pure-Python parts also work without a build (rust tests skip).

DATA = os.path.join(ROOT, "tests", "data")


def _reference() -> Callable:
    from hlodump.reference import read_arrow

    return read_arrow


def _rust() -> Callable:
    try:
        importlib.import_module("hlodump._core")
    except ImportError as e:
        pytest.skip(f"native module hlodump._core not importable: {e}")
    import hlodump

    return hlodump.read_arrow


READERS: dict[str, Callable[[], Callable]] = {"reference": _reference, "rust": _rust}


@pytest.fixture(params=sorted(READERS, key=lambda k: k != "reference"))
def reader(request: pytest.FixtureRequest) -> Callable:
    """``read_arrow`` of one implementation (params: "reference", "rust")."""
    return READERS[request.param]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--hlo-corpus", default=None,
                     help="a directory of real dumps: test_hlo_grammar compares our HLO parse with XLA's on it")
