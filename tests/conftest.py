"""Shared fixtures.

``reader`` is parametrized over the implementations that read dump files: ``"reference"``
(the pure-Python ``hlodump.reference.read_arrow``) and ``"rust"`` (``hlodump.read_arrow``, backed by
the native module ``hlodump._core``; skipped when that module is not importable). Tests that take
``reader`` therefore run once per implementation and must hold for both.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Tests import the *installed* package (`pip install -e .` builds hlodump._core into python/);
# with PYTHONPATH=python the pure-Python parts also work without a build (rust tests skip).

DATA = os.path.join(ROOT, "tests", "data")


def big_buffer_assignment(seed: bytes, at_least: int) -> bytes:
    """``seed`` (a buffer-assignment file) repeated to ``at_least`` bytes, each copy's allocation
    indices shifted past the previous copy's, so the file stays one valid assignment (a
    repeated index is an error: two assignments concatenated)."""
    import re

    n = at_least // len(seed) + 1
    top = max(int(m) for m in re.findall(rb"^allocation (\d+):", seed, re.M)) + 1
    return b"".join(re.sub(rb"^allocation (\d+):", lambda m, k=k: b"allocation %d:" % (int(m.group(1)) + k * top),
                           seed, flags=re.M) for k in range(n))


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


# ------------------------------------------------------------------ an S3-compatible server

#: Dump directories of tests/data uploaded to the test bucket, as (local dir, key prefix).
S3_BUCKET = "hlodump-test"
S3_DIRS = [
    ("corpus/jax-0.10.2/control_flow", "runs/control_flow"),
    ("corpus/jax-0.4.26/spmd", "runs/spmd"),
    ("memory_report", "reports/memory_report"),
    ("oom", "oom"),
]


@pytest.fixture(scope="session")
def moto_s3():
    """A real S3-compatible server (moto's, threaded, on 127.0.0.1 and a free port) with
    ``S3_DIRS`` uploaded into ``S3_BUCKET``. Yields the endpoint URL; credentials are any."""
    pytest.importorskip("obstore")
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                         aws_secret_access_key="testing", region_name="us-east-1")
        c.create_bucket(Bucket=S3_BUCKET)
        for local, prefix in S3_DIRS:
            root = os.path.join(DATA, local)
            for d, _, files in os.walk(root):
                for f in files:
                    full = os.path.join(d, f)
                    rel = os.path.relpath(full, root).replace(os.sep, "/")
                    with open(full, "rb") as fh:
                        c.put_object(Bucket=S3_BUCKET, Key=f"{prefix}/{rel}", Body=fh.read())
        yield endpoint
    finally:
        server.stop()


@pytest.fixture
def s3_env(moto_s3, monkeypatch):
    """The standard AWS environment variables pointing at the test server."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_s3)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    return moto_s3


def chromium_cdp():
    """The test driver of Chromium (tests/cdp.py), or a skip saying what is missing (the
    HTML tests of the report, the page's formatters and the viewer)."""
    cdp = pytest.importorskip("cdp")
    pytest.importorskip("websocket")
    if cdp.chromium() is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    return cdp
