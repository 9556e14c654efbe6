"""Object-store URLs and in-memory buffers as inputs (``hlodump.io.stores``), against a real
S3-compatible server (moto's, on 127.0.0.1; see ``conftest.moto_s3``), fsspec's memory
filesystem and plain buffers: every table equals the local read of the same files, cell for
cell; configuration by environment variables and by ``storage_options``; errors name the URL."""

from __future__ import annotations

import gc
import glob
import io
import os
import socket
import subprocess
import sys

import pyarrow as pa
import pytest

import hlodump
from hlodump.io import stores

from conftest import DATA, S3_BUCKET, S3_DIRS

pytest.importorskip("hlodump._core")

CF = os.path.join(DATA, "corpus/jax-0.10.2/control_flow")
BA = "module_0002.jit_rnn_loss.cpu_after_optimizations-buffer-assignment.txt"


def rows(d: hlodump.Dump, name: str, dump_map=None) -> list[dict]:
    r = d[name].to_pylist()
    if dump_map is not None and name == "files":
        for x in r:
            x["dump"] = dump_map(x["dump"])
            x["path"] = dump_map(x["path"])
    return r


def assert_same(remote: hlodump.Dump, local: hlodump.Dump, dump_map=None) -> None:
    """Every table equal cell for cell (``files.dump`` / ``files.path`` through ``dump_map``)."""
    assert list(remote) == list(local)
    for name in local:
        assert remote[name].schema == local[name].schema, name
        assert remote[name].num_rows == local[name].num_rows, name
        assert rows(remote, name, dump_map) == rows(local, name), name


def prefix_map(remote_root: str, local_root: str):
    def f(s):
        return local_root + s[len(remote_root):] if s is not None and s.startswith(remote_root) else s
    return f


# ------------------------------------------------------------------------------ S3 (moto)


@pytest.mark.parametrize("local,prefix", S3_DIRS)
def test_s3_prefix_equals_local_directory(s3_env, local, prefix):
    url = f"s3://{S3_BUCKET}/{prefix}"
    remote = hlodump.read_arrow(url, on_error="collect")
    here = hlodump.read_arrow(os.path.join(DATA, local), on_error="collect")
    assert remote["files"].num_rows > 0
    assert_same(remote, here, prefix_map(url, os.path.join(DATA, local)))
    # the same with string_view=False (large_string copies)
    r2 = hlodump.read_arrow(url + "/", on_error="collect", string_view=False)
    assert_same(r2, hlodump.read_arrow(os.path.join(DATA, local), on_error="collect", string_view=False),
                prefix_map(url, os.path.join(DATA, local)))


def test_s3_dumps_follow_the_local_rules(s3_env):
    # the bucket's runs/ holds two dumps: each file's dump is its own run's prefix
    d = hlodump.read_arrow(f"s3://{S3_BUCKET}/runs", tables=["files"])
    dumps = set(d["files"].column("dump").to_pylist())
    assert dumps == {f"s3://{S3_BUCKET}/runs/control_flow", f"s3://{S3_BUCKET}/runs/spmd"}
    local = hlodump.read_arrow(os.path.join(DATA, "corpus"), tables=["files"])  # same rule, local
    assert {p.split("/")[0] for p in d["files"].column("path").to_pylist()} == {"control_flow", "spmd"}
    assert local["files"].num_rows > d["files"].num_rows
    # a list: shown as <url>/<relative key>, dumps as for local lists
    d2 = hlodump.read_arrow([f"s3://{S3_BUCKET}/runs/control_flow", CF], tables=["files"])
    paths = d2["files"].column("path").to_pylist()
    n = len(paths) // 2
    assert all(p.startswith(f"s3://{S3_BUCKET}/runs/control_flow/") for p in paths[:n])
    assert [p.split("control_flow/", 1)[1] for p in paths[:n]] == [p.split("control_flow/", 1)[1] for p in paths[n:]]


def test_s3_single_object_is_named_explicitly(s3_env):
    url = f"s3://{S3_BUCKET}/runs/control_flow/{BA}"
    d = hlodump.read_arrow(url)
    local = hlodump.read_arrow(os.path.join(CF, BA))
    f = d["files"].to_pylist()[0]
    assert f["path"] == url and f["dump"] == url
    assert_same(d, local, prefix_map(url, os.path.join(CF, BA)))
    # several named module objects of one prefix: one dump, that prefix (as for local files)
    other = url.replace("buffer-assignment.txt", "live-range.txt")
    d = hlodump.read_arrow([url, other], tables=["files"])
    assert set(d["files"].column("dump").to_pylist()) == {f"s3://{S3_BUCKET}/runs/control_flow"}


def test_s3_globs_match_keys_like_paths(s3_env):
    url = f"s3://{S3_BUCKET}/runs/*/module_0002*"
    d = hlodump.read_arrow(url, tables=["files"])
    paths = d["files"].column("path").to_pylist()
    local = []
    for run_dir, prefix in ((CF, "control_flow"), (os.path.join(DATA, "corpus/jax-0.4.26/spmd"), "spmd")):
        got = hlodump.read_arrow(os.path.join(run_dir, "module_0002*"), tables=["files"])
        local += [f"s3://{S3_BUCKET}/runs/{prefix}/" + p[len(run_dir) + 1:] for p in got["files"].column("path").to_pylist()]
    # the same files as the local glob, in the same order; a matched per-module folder is walked
    assert paths == local
    assert any(p.startswith(f"s3://{S3_BUCKET}/runs/control_flow/module_0002.jit_rnn_loss/") for p in paths)
    # module files matched by a glob belong to their directory
    assert {dm for p, dm in zip(paths, d["files"].column("dump").to_pylist()) if "/module_0002.jit_rnn_loss." in p} \
        == {f"s3://{S3_BUCKET}/runs/control_flow"}
    # ** is recursive
    d = hlodump.read_arrow(f"s3://{S3_BUCKET}/**/*-memory-usage-report.txt", tables=["files"])
    n_local = len(glob.glob(os.path.join(DATA, "corpus/jax-0.10.2/control_flow/**/*-memory-usage-report.txt"), recursive=True)) \
        + len(glob.glob(os.path.join(DATA, "corpus/jax-0.4.26/spmd/**/*-memory-usage-report.txt"), recursive=True)) \
        + len(glob.glob(os.path.join(DATA, "memory_report/**/*-memory-usage-report.txt"), recursive=True)) \
        + len(glob.glob(os.path.join(DATA, "oom/**/*-memory-usage-report.txt"), recursive=True))
    assert d["files"].num_rows == n_local > 0
    assert set(d["files"].column("kind").to_pylist()) == {"memory_usage_report"}


def test_s3_storage_options_without_environment(moto_s3, monkeypatch):
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    url = f"s3://{S3_BUCKET}/runs/control_flow"
    opts = {"aws_endpoint": moto_s3, "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
            "aws_region": "us-east-1"}  # http:// endpoint: plain HTTP allowed by itself
    d = hlodump.read_arrow(url, storage_options=opts, tables=["allocations"])
    assert d["allocations"].num_rows == hlodump.read_arrow(CF, tables=["allocations"])["allocations"].num_rows
    # s3fs-style names work too
    s3fs_style = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": moto_s3, "region_name": "us-east-1"}}
    assert hlodump.read_arrow(url, storage_options=s3fs_style, tables=["files"])["files"].num_rows > 0
    with pytest.raises(stores.StoreError, match="unknown storage option"):
        hlodump.read_arrow(url, storage_options={**opts, "no_such_option": 1})


def test_s3_missing_object_and_bucket_name_the_url(s3_env):
    url = f"s3://{S3_BUCKET}/runs/nothing_here"
    with pytest.raises(FileNotFoundError) as e:
        hlodump.read_arrow(url)
    assert url in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        hlodump.read_arrow("s3://no-such-bucket-hlodump/x")
    assert "s3://no-such-bucket-hlodump/x" in str(e.value) and "bucket" in str(e.value)


def test_s3_unreachable_endpoint_is_a_clear_error(monkeypatch):
    pytest.importorskip("obstore")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    opts = {"retry_config": {"max_retries": 0}}
    with pytest.raises(stores.StoreError) as e:
        hlodump.read_arrow("s3://bucket/dump", storage_options=opts)
    msg = str(e.value)
    assert msg.startswith("s3://bucket/dump: cannot list:") and "network error" in msg
    assert isinstance(e.value, OSError) and isinstance(e.value, hlodump.HlodumpError)


def test_s3_object_that_cannot_be_fetched_is_a_files_row(s3_env, monkeypatch):
    real = stores.ObstoreBackend.get_sync

    def flaky(self, key, size=0):
        if key.endswith("live-range.txt"):
            raise PermissionError(13, "denied")
        return real(self, key, size)

    monkeypatch.setattr(stores.ObstoreBackend, "get_sync", flaky)
    d = hlodump.read_arrow(f"s3://{S3_BUCKET}/runs/control_flow", on_error="collect")
    f = d["files"].to_pylist()
    bad = [x for x in f if x["path"].endswith("live-range.txt")]
    assert bad and all(x["error"].startswith("PermissionError") and not x["parsed"] for x in bad)
    assert all(x["error"] is None for x in f if not x["path"].endswith("live-range.txt"))
    # named explicitly: raised, with the URL
    with pytest.raises(PermissionError, match="live-range"):
        hlodump.read_arrow(f"s3://{S3_BUCKET}/runs/control_flow/module_0002.jit_rnn_loss.cpu_after_optimizations-live-range.txt")


def test_s3_progress_bar_says_fetching(s3_env, capsys):
    hlodump.read_arrow(f"s3://{S3_BUCKET}/oom", progress=True, on_error="collect")
    err = capsys.readouterr().err
    assert "hlodump fetching" in err
    n = len(os.listdir(os.path.join(DATA, "oom")))
    assert f"{n}/{n} files" in err


def run_cli(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlodump.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_reads_s3_with_environment_variables(s3_env, tmp_path):
    url = f"s3://{S3_BUCKET}/runs/control_flow"
    r = run_cli("tables", url, "--json", env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    local = run_cli("tables", CF, "--json")
    assert r.stdout == local.stdout
    r = run_cli("query", url, "select count(*) as n from instructions", "--format", "csv", env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.splitlines()[1] == str(hlodump.read_arrow(CF)["instructions"].num_rows)
    r = run_cli("summary", url, "--json", env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    # convert to a prefix of the bucket, then read the Parquet back
    out = f"s3://{S3_BUCKET}/converted/cf"
    r = run_cli("convert", url, out, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"{out}/files.parquet"
    import pyarrow.parquet as pq

    got = pq.read_table(io.BytesIO(bytes(
        __import__("obstore").get(stores.backend_for(out)[0].store, "converted/cf/allocations.parquet").bytes())))
    assert got.num_rows == hlodump.read_arrow(CF)["allocations"].num_rows


def test_cli_store_mistakes_are_one_line(s3_env):
    env = dict(os.environ)
    r = run_cli("tables", f"s3://{S3_BUCKET}/no/such/prefix", env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("hlodump: ") and f"s3://{S3_BUCKET}/no/such/prefix" in r.stderr
    r = run_cli("tables", "s3://no-such-bucket-hlodump/x", env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "bucket" in r.stderr
    r = run_cli("tables", f"s3://{S3_BUCKET}/runs/control_flow", "--storage-option", "bogus_key=1", env=env)
    # a usage mistake (issue 39: one exit status per kind of problem)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "unknown storage option" in r.stderr
    r = run_cli("tables", f"s3://{S3_BUCKET}/runs/control_flow", "--storage-option", "novalue", env=env)
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr


# ------------------------------------------------------------------------------ fsspec, file://


@pytest.fixture
def memfs():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    root = "/hlodump-test/cf"
    for d, _, files in os.walk(CF):
        for f in files:
            full = os.path.join(d, f)
            with open(full, "rb") as fh:
                fs.pipe_file(root + "/" + os.path.relpath(full, CF).replace(os.sep, "/"), fh.read())
    yield "memory://hlodump-test/cf"
    fs.rm("/hlodump-test", recursive=True)


def test_memory_url_equals_local_directory(memfs):
    remote = hlodump.read_arrow(memfs, on_error="collect")
    here = hlodump.read_arrow(CF, on_error="collect")
    assert_same(remote, here, prefix_map(memfs, CF))
    one = hlodump.read_arrow(f"{memfs}/{BA}")
    assert one["files"].column("path").to_pylist() == [f"{memfs}/{BA}"]
    assert one["allocations"].to_pylist() == hlodump.read_arrow(os.path.join(CF, BA))["allocations"].to_pylist()
    with pytest.raises(FileNotFoundError, match="memory://hlodump-test/nope"):
        hlodump.read_arrow("memory://hlodump-test/nope")
    d = hlodump.read_arrow(f"{memfs}/module_000[02]*", tables=["files"])
    got = d["files"].column("path").to_pylist()
    assert {p.split("/cf/", 1)[1].split(".")[0] for p in got} == {"module_0000", "module_0002"}
    # the per-module folders the glob matched are walked
    assert f"{memfs}/module_0000.jit_rnn/module.mlir".replace("memory://", "memory:///") in got


def test_file_url_is_the_local_path(tmp_path):
    url = "file://" + CF
    d = hlodump.read_arrow(url, on_error="collect")
    here = hlodump.read_arrow(CF, on_error="collect")
    assert_same(d, here, prefix_map(url, CF))
    with pytest.raises(FileNotFoundError, match="file:///no/such"):
        hlodump.read_arrow("file:///no/such/dir")


def test_unknown_protocol_is_a_clear_error():
    from hlodump.exceptions import UnsupportedURLError

    with pytest.raises(UnsupportedURLError, match="nosuchproto://x"):
        hlodump.read_arrow("nosuchproto://x/y")


# ------------------------------------------------------------------------------ buffers


def local_files(root: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def test_buffers_equal_local_files():
    paths = local_files(CF)
    bufs = {p: open(p, "rb").read() for p in paths}
    d = hlodump.read_arrow(bufs, on_error="collect")
    assert_same(d, hlodump.read_arrow(paths, on_error="collect"))
    pairs = [(p, memoryview(b)) for p, b in bufs.items()]
    assert_same(hlodump.read_arrow(pairs, on_error="collect"), d)
    # one named buffer: path and dump are its name
    one = hlodump.read_arrow({BA: bufs[os.path.join(CF, BA)]})
    assert one["files"].to_pylist()[0]["path"] == BA == one["files"].to_pylist()[0]["dump"]
    assert one["files"].to_pylist()[0]["kind"] == "buffer_assignment"


def test_every_buffer_type_and_no_copy():
    np = pytest.importorskip("numpy")
    data = open(os.path.join(CF, BA), "rb").read()
    want = hlodump.read_arrow(os.path.join(CF, BA))["assignments"].to_pylist()
    obstore = pytest.importorskip("obstore")
    kinds = [data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8), pa.py_buffer(data),
             obstore.Bytes(data), pa.array(np.frombuffer(data, np.uint8))]
    for obj in kinds:
        d = hlodump.read_arrow({BA: obj})
        assert d["assignments"].to_pylist() == want, type(obj)
    # zero copy: the text columns' data buffers are the caller's memory
    buf = pa.py_buffer(data)
    d = hlodump.read_arrow({BA: buf}, string_view=True)
    col = d["assignments"].column("instruction").chunk(0)
    assert any(b.address == buf.address and b.size == buf.size for b in col.buffers()[2:] if b is not None)
    # the tables keep the memory alive
    arr = bytearray(data)
    d = hlodump.read_arrow({BA: arr})
    with pytest.raises(BufferError):  # exported: cannot be resized under the tables
        arr.extend(b"x")
    del arr, buf
    gc.collect()
    assert d["assignments"].to_pylist() == want


def test_buffer_mistakes():
    with pytest.raises(TypeError, match="bytes-like"):
        hlodump.read_arrow([("x.txt", 3)])
    with pytest.raises(TypeError, match="contiguous"):
        np = pytest.importorskip("numpy")
        hlodump.read_arrow({"x.txt": np.zeros((4, 4), np.uint8)[:, ::2]})
    with pytest.raises(hlodump.ParseError, match="not an XLA dump file"):
        hlodump.read_arrow({"notes.txt": b"hello\n"})


def test_a_list_mixes_paths_urls_and_buffers(s3_env):
    data = open(os.path.join(CF, BA), "rb").read()
    url = f"s3://{S3_BUCKET}/oom"
    d = hlodump.read_arrow([os.path.join(CF, BA), ("mem/" + BA, data), url], tables=["files", "allocations"],
                           on_error="collect")
    paths = d["files"].column("path").to_pylist()
    assert paths[0] == os.path.join(CF, BA) and paths[1] == "mem/" + BA
    assert all(p.startswith(url + "/") for p in paths[2:]) and len(paths) == 2 + len(os.listdir(os.path.join(DATA, "oom")))
    ids = d["allocations"].column("file_id").to_pylist()
    assert ids.count(0) == ids.count(1) > 0
    # the buffer's dump is its name; the local file's its path; the prefix's files: the prefix
    dumps = d["files"].column("dump").to_pylist()
    assert dumps[:3] == [os.path.join(CF, BA), "mem/" + BA, url]


def test_scan_takes_urls_and_buffers(s3_env):
    url = f"s3://{S3_BUCKET}/runs/control_flow"
    want = hlodump.read_arrow(CF, string_view=True)["instructions"]
    got = pa.Table.from_batches(list(hlodump.scan(url, "instructions", columns=["name", "opcode"])))
    assert got.to_pylist() == want.select(["name", "opcode"]).to_pylist()
    data = open(os.path.join(CF, BA), "rb").read()
    got = pa.Table.from_batches(list(hlodump.scan({BA: data}, "allocations")))
    assert got.to_pylist() == hlodump.read_arrow(os.path.join(CF, BA), string_view=True)["allocations"].to_pylist()


# ------------------------------------------------------------------------------ a lying S3 server
# (issue 50, item 4) A store that repeats its continuation token, lists new keys for ever, or
# answers a GET with a Content-Length far beyond the object: a small S3 of our own on
# 127.0.0.1 (moto cannot be made to lie), spoken to by obstore as any S3.

_LIAR_SCRIPT = r'''
import http.server, sys, threading, urllib.parse
MODE = sys.argv[1]
KEY = "p/module_0000.m.cpu_after_optimizations.txt"
count = {"list": 0}

def page(keys, token):
    items = "".join(f"<Contents><Key>{k}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                    f"<ETag>&quot;e&quot;</ETag><Size>100</Size><StorageClass>STANDARD</StorageClass></Contents>"
                    for k in keys)
    more = f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken>" if token else \
        "<IsTruncated>false</IsTruncated>"
    return (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><Prefix>p/</Prefix>'
            f"<KeyCount>{len(keys)}</KeyCount><MaxKeys>1000</MaxKeys>{more}{items}</ListBucketResult>").encode()

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, body, length=None, status=200):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.send_header("ETag", '"e"')
        self.send_header("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_HEAD(self):
        self.send(b"", length=100)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if "list-type" in q:
            count["list"] += 1
            sys.stderr.write("LIST\n"); sys.stderr.flush()
            n = count["list"]
            if MODE == "repeat":  # the same page (1,000 keys, as S3 pages) and the same token, for ever
                return self.send(page([KEY] + [f"p/x{i:04d}.txt" for i in range(999)], "same-token"))
            if MODE == "endless":  # always new keys, always more
                return self.send(page([f"p/{n:08d}-{i:04d}.txt" for i in range(1000)], f"t{n}"))
            if MODE == "empty":  # an empty page and the same token, for ever
                return self.send(page([], "same-token"))
            return self.send(page([KEY], None))
        # an object of 100 bytes whose GET claims 100 GB and sends 200 bytes
        self.send(b"x" * 200, length=100 * 10**9)
        self.close_connection = True

s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
'''


@pytest.fixture
def liar(tmp_path):
    """Start the lying S3 in a mode; yields (storage_options, the server process)."""
    procs = []

    def start(mode):
        script = tmp_path / "liar.py"
        script.write_text(_LIAR_SCRIPT)
        p = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        procs.append(p)
        port = int(p.stdout.readline())
        opts = {"aws_endpoint": f"http://127.0.0.1:{port}", "aws_access_key_id": "k",
                "aws_secret_access_key": "s", "aws_region": "us-east-1"}
        return opts, p

    yield start
    for p in procs:
        p.kill()
        p.wait()


def _list_requests(p) -> int:
    p.kill()
    return p.stderr.read().count("LIST")


def _hlodump_py(code: str, opts: dict, timeout: float = 90) -> subprocess.CompletedProcess:
    """Run ``code`` in a child with ``opts`` as ``sys.argv[1]`` (JSON): a hang of the old code is
    a timeout here, an abort a status, neither the end of the test run."""
    import json

    try:
        return subprocess.run([sys.executable, "-c", "import hlodump, json, sys; opts = json.loads(sys.argv[1])\n" + code,
                               json.dumps(opts)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer in {timeout} s: the listing or fetch hangs")


def test_lying_store_listings_and_gets_are_bounded(liar):
    # a repeated continuation token: a key twice is an error at once (it was 1,946 requests in 60 s)
    opts, p = liar("repeat")
    r = _hlodump_py("hlodump.read_arrow('s3://b/p/', storage_options=opts)", opts)
    assert r.returncode == 1 and "ListingError" in r.stderr and "listed 'p/module_0000" in r.stderr, r.stderr[-800:]
    assert "twice" in r.stderr and _list_requests(p) <= 5
    # the command line: one line, the environment's status
    opts, p = liar("repeat")
    c = subprocess.run([sys.executable, "-m", "hlodump", "tables", "s3://b/p/",
                        *[f"--storage-option={k}={v}" for k, v in opts.items()]],
                       capture_output=True, text=True, timeout=90)
    assert c.returncode == 3 and c.stderr.startswith("hlodump: s3://b/p/: the store listed") and "Traceback" not in c.stderr
    p.kill()
    # new keys for ever: max_files applies to a listing (it listed 22 million keys)
    opts, p = liar("endless")
    r = _hlodump_py("hlodump.read_arrow('s3://b/p/', storage_options=opts, max_files=5000)", opts)
    assert "WalkLimitError" in r.stderr and "more than 5,000 objects" in r.stderr, r.stderr[-800:]
    assert _list_requests(p) <= 8
    # an object whose GET claims 100 GB (obstore allocated it whole: the process aborted)
    opts, p = liar("liar")
    r = _hlodump_py("d = hlodump.read_arrow('s3://b/p/', storage_options=opts, on_error='collect')\n"
                    "print(d['files'].column('error').to_pylist())\n"
                    "try:\n"
                    "    hlodump.read_arrow('s3://b/p/module_0000.m.cpu_after_optimizations.txt', storage_options=opts)\n"
                    "except OSError as e:\n"
                    "    print('named:', type(e).__name__, e)\n", opts)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "larger than the 100 bytes listed" in r.stdout, r.stdout
    assert "named: ObjectSizeError" in r.stdout and "Traceback" not in r.stderr


def test_lying_store_empty_pages_for_ever_stop(liar):
    # the same token with empty pages: no key ever comes, so no key repeats; the listing stops
    # when nothing new came for LIST_STALL_SECONDS (here 3 s) instead of hanging
    opts, p = liar("empty")
    r = _hlodump_py("import time\nfrom hlodump.io import stores\nstores.LIST_STALL_SECONDS = 3.0\n"
                    "t0 = time.monotonic()\n"
                    "try:\n"
                    "    hlodump.read_arrow('s3://b/p/', storage_options=opts)\n"
                    "except OSError as e:\n"
                    "    print(type(e).__name__, e, round(time.monotonic() - t0))\n", opts, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("ListingError") and "no new object for 3 s" in r.stdout, \
        r.stdout + r.stderr[-800:]
    assert int(r.stdout.split()[-1]) < 20
