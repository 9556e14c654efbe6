"""Inputs that are not local files: object-store URLs and in-memory buffers.

``read_arrow`` (and every CLI command) takes, besides local paths:

* **URLs** — ``s3://bucket/prefix``, ``gs://…``, ``az://…`` (also ``s3a``, ``gcs``, ``abfs[s]``,
  ``azure``, ``adl``) through `obstore` (Rust ``object_store``: one listing of the prefix, then
  every object fetched concurrently, big objects in concurrent ranges; the fetched bytes are the
  buffers the tables point into, no copy); ``memory://`` and every other fsspec storage protocol
  (``http://``, ``ftp://``, ``hdfs://`` …) through `fsspec`. Not read, each an
  ``hlodump.exceptions.UnsupportedURLError`` (one line, exit status 2 on the command line):
  chained URLs (``simplecache::s3://…``, ``tar://x::file:///…``), fsspec's wrappers of other
  filesystems or data (``reference://``, ``tar://``, ``zip://``, ``dir://``, the caches …: name the
  file itself; tar archives are read as local files), and URLs no installed filesystem serves;
  ``file://`` as the local path it names (memory-mapped like any local file).
* **Buffers** — ``{name: bytes_like}`` or a list of ``(name, bytes_like)`` pairs: anything with
  the buffer protocol (``bytes``, ``bytearray``, ``memoryview``, numpy arrays, obstore ``Bytes``,
  ``pyarrow.Buffer``). The name classifies the file exactly like a path.

A URL is walked like a local directory: a URL naming an object reads that object (named
explicitly); otherwise it is a prefix ("directory"), listed recursively, its objects sorted by
their key relative to it, shown as that relative key (or ``<url>/<relative key>`` in a list),
and given a ``files.dump`` by the rules of ``hlodump.io.paths`` applied to the keys. Glob
characters in the key (``s3://b/runs/*/module_0001*``, ``**`` recursive) match keys the way
``glob.glob`` matches paths; a match that is a "directory" is walked.

Configuration: the usual environment variables (S3: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``; GCS:
``GOOGLE_APPLICATION_CREDENTIALS``, ``GOOGLE_SERVICE_ACCOUNT``; Azure: ``AZURE_STORAGE_ACCOUNT_NAME``,
``AZURE_STORAGE_ACCOUNT_KEY`` …), or ``storage_options={...}``: for obstore URLs the
``object_store`` keys (``aws_access_key_id``, ``aws_endpoint``, ``region``, ``allow_http``,
``timeout`` …; s3fs-style ``key``, ``secret``, ``token``, ``endpoint_url``, ``region_name``,
``anon``, ``client_kwargs`` are translated), for fsspec URLs the filesystem's own arguments. An
``http://`` endpoint allows plain HTTP by itself (as boto3 does).

Errors: a missing object, prefix or bucket is ``FileNotFoundError`` naming the URL; access
denied is ``PermissionError``; anything else (network, credentials, a bad option) is
``hlodump.io.stores.StoreError`` (an ``OSError`` and a ``HlodumpError``) whose message starts with
the URL. An object of a listing that cannot be fetched is a ``files`` row with ``error``, like an
unreadable file of a local directory.
"""

from __future__ import annotations

import os
import posixpath
import re
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from typing import Any, Callable, Optional

from ..exceptions import HlodumpError
from .paths import MAX_FILES, WalkLimitError, expand_one, walk_entry, MODULE_ENTRY, walk_dumps
from .archives import compression_of, decompressed  # noqa: F401 (re-exported)
from .inputs import Origin, Plan, Remote

__all__ = ["StoreError", "is_url", "needs_stores", "Plan", "plan", "put_bytes", "OBSTORE_SCHEMES"]

#: (path to open, path to show, named explicitly, error): a walked entry (``hlodump.io.paths.Input``),
#: made a ``hlodump.io.plan.Input`` record by ``Plan.add``.
Input = tuple[str, str, bool, Optional[str]]

#: Schemes read with obstore; every other ``scheme://`` goes to fsspec (``file://`` is local).
OBSTORE_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl"})

#: Our schemes that object_store spells otherwise.
_OBJECT_STORE_SCHEME = {"gcs": "gs"}

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_CHAINED = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*::")
_GLOB = re.compile(r"[*?\[]")
# the user-info part of a URL (``s3://KEY:SECRET@bucket/…``, ``ftp://user:pw@host/…``)
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)([^/@\s]*)@")


def redact(text: str) -> str:
    """``text`` without the credentials of the URLs in it: ``s3://KEY:SECRET@bucket/k`` →
    ``s3://bucket/k`` (what we keep in ``files.path``/``files.dump`` and print in errors)."""
    return _URL_USERINFO_ANYWHERE.sub(r"\1", text)


# greedy to the last '@' before the path: a password may hold an '@' of its own
_URL_USERINFO_ANYWHERE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#\s'\"]*@")

#: Objects at least this large are fetched as concurrent ranges (then joined: one copy).
RANGE_THRESHOLD = 64 << 20
RANGE_STEP = 16 << 20
#: Requests in flight at once (threads; obstore's calls release the GIL).
CONCURRENCY = 32


class StoreError(HlodumpError, OSError):
    """An object store could not be reached or used (network, credentials, configuration).
    The message starts with the URL."""


def is_url(p: Any) -> bool:
    """Whether ``p`` is a URL (``scheme://…`` or an fsspec chain ``a::b://…``), not a path."""
    return isinstance(p, str) and bool(_SCHEME.match(p) or _CHAINED.match(p))


def _is_pair(x: Any) -> bool:
    return (isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str)
            and not isinstance(x[1], (str, os.PathLike)) and _has_buffer(x[1]))


def _has_buffer(x: Any) -> bool:
    if isinstance(x, (bytes, bytearray, memoryview)):
        return True
    try:
        memoryview(x).release()
        return True
    except TypeError:
        import pyarrow as pa

        return isinstance(x, (pa.Buffer, pa.Array))


def _items(path: Any) -> tuple[list[Any], bool]:
    """(items, given as a list): a Mapping of buffers becomes its (name, buffer) pairs."""
    if isinstance(path, Mapping):
        return list(path.items()), True
    if isinstance(path, (list, tuple)) and not _is_pair(path):
        return list(path), True
    return [path], False


def needs_stores(path: Any) -> bool:
    """Whether ``path`` holds a URL or a buffer (else ``hlodump.io.paths`` expands it alone)."""
    items, _ = _items(path)
    for it in items:
        if isinstance(it, tuple) and not _is_pair(it) and len(it) == 2 and isinstance(it[0], str):
            raise TypeError(f"{it[0]!r}: an in-memory input needs a bytes-like buffer "
                            f"(bytes, memoryview, bytearray, numpy array …), not {type(it[1]).__name__}")
        if _is_pair(it) or (is_url(it) and not os.path.lexists(it)):
            return True
    return False


# ------------------------------------------------------------------------------ backends


#: object_store's text for a request the server refused (GCS and Azure answer 401/403 with a
#: body of their own; object_store raises a generic error for them).
_DENIED_STATUS = re.compile(r"non-2xx status code: (40[13] [A-Za-z ]+?):")


def _short(e: BaseException) -> str:
    """The useful part of an object-store error: the S3 error code and message if the server
    sent one, else the first line (object_store appends request details and a debug dump)."""
    text = str(e)
    code = re.search(r"<Code>([^<]*)</Code>", text)
    msg = re.search(r"<Message>([^<]*)</Message>", text)
    if code:
        return code.group(1) + (f": {msg.group(1)}" if msg else "")
    status = _DENIED_STATUS.search(text)
    gcs = re.search(r'"message":\s*"((?:[^"\\]|\\.)*)"', text)  # GCS's JSON error body
    if status and gcs:
        return f"{status.group(1)}: {gcs.group(1)}"
    head = text.split("\n\nDebug source:")[0].strip()
    first = head.splitlines()[0] if head else type(e).__name__
    os_error = re.search(r'Os \{[^}]*?message: "([^"]*)"', text, re.S)
    if os_error or "HTTP error" in first or "kind: Connect" in text or "dns error" in text:
        host = re.search(r"https?://(?:[^/?#\s'\"]*@)?([^/\s?@'\"]+)", text)  # never the user:password@ part
        cause = os_error.group(1) if os_error else (
            "dns error" if "dns error" in text else first.split("HTTP error:", 1)[-1].strip())
        if "kind: Timeout" in text or "timed out" in text:
            cause = "timed out"
        return f"network error: {cause}" + (f" ({host.group(1)})" if host else "")
    return first if len(first) <= 300 else first[:300] + "…"


def _redacted(e: BaseException) -> BaseException:
    """``e`` with the credentials of URLs removed from its text (and ``filename``)."""
    if isinstance(e, OSError):
        if isinstance(e.filename, str):
            e.filename = redact(e.filename)
        if isinstance(e.strerror, str):
            e.strerror = redact(e.strerror)
    e.args = tuple(redact(a) if isinstance(a, str) else a for a in e.args)
    return e


def _reraise_interrupts(e: BaseException) -> None:
    """Let Ctrl-C and exits through; everything else (obstore's ``PanicException``, a
    ``BaseException``, included) becomes a ``StoreError`` by ``_error``."""
    if isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit)):
        raise e


def store_error(e: BaseException, url: str, action: str) -> BaseException:
    """``e`` (from obstore or fsspec) as the exception hlodump raises for ``url``."""
    url = redact(url)
    if isinstance(e, (KeyboardInterrupt, MemoryError, StoreError)):
        return e
    name = type(e).__name__
    short = _short(e)
    if "NoSuchBucket" in short:
        return FileNotFoundError(2, f"bucket does not exist ({short})", url)
    if isinstance(e, FileNotFoundError) or name == "NotFoundError" or "NoSuchKey" in short:
        return FileNotFoundError(2, "No such object", url)
    if isinstance(e, PermissionError) or name in ("PermissionDeniedError", "UnauthenticatedError") \
            or short.startswith(("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Authorization",
                                 "AuthenticationFailed")) \
            or _DENIED_STATUS.search(str(e)):
        return PermissionError(13, f"access denied ({short})", url)
    if name == "UnknownConfigurationKeyError":
        return StoreError(f"{url}: unknown storage option ({short})")
    return StoreError(f"{url}: cannot {action}: {redact(short)}")


def row_error(e: BaseException) -> str:
    """A fetch failure as ``files.error`` text (``FileNotFoundError: …``, as for local files)."""
    if isinstance(e, FileNotFoundError):
        return "FileNotFoundError: No such object (deleted since it was listed?)"
    if isinstance(e, PermissionError):
        return f"PermissionError: {e.strerror or e}"
    return f"OSError: {e}"


_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "default_headers", "http1_only", "http2_only", "http2_keep_alive_interval",
    "http2_keep_alive_timeout", "http2_keep_alive_while_idle", "pool_idle_timeout",
    "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
    "root_certificate", "randomize_addresses", "read_timeout", "timeout", "user_agent",
})
_S3FS_KEYS = {"key": "aws_access_key_id", "secret": "aws_secret_access_key", "token": "aws_session_token",
              "endpoint_url": "aws_endpoint", "region_name": "aws_region"}


def _check_option(key: str, value: Any) -> None:
    """Refuse values obstore (object_store) would panic on instead of reporting: an endpoint
    that is not an http(s) URL, a region that is not a region name."""
    lk = key.lower()
    if not isinstance(value, str):
        return
    if "endpoint" in lk:
        from urllib.parse import urlsplit

        try:
            u = urlsplit(value)
            ok = u.scheme in ("http", "https") and bool(u.hostname)
            u.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            ok = False
        if not ok or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7f for c in value):
            raise StoreError(f"storage option {key}={redact(value)!r} is not an http(s) URL (e.g. http://127.0.0.1:9000)")
    if lk.endswith("region") and not re.fullmatch(r"[A-Za-z0-9_\-]*", value):
        raise StoreError(f"storage option {key}={value!r} is not a region name (e.g. us-east-1)")


def _obstore_options(scheme: str, storage_options: Optional[Mapping[str, Any]]) -> tuple[dict, dict, Any]:
    """(config, client_options, retry_config) for obstore from ``storage_options``."""
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    retry = None
    for k, v in dict(storage_options or {}).items():
        lk = k.lower()
        _check_option(k, v)
        # `aws_allow_http`, `google_timeout` …: client options with a store prefix (object_store
        # panicked on them as store config: "Expected config prefix to start with aws_")
        unprefixed = lk.split("_", 1)[1] if lk.startswith(("aws_", "google_", "azure_")) else lk
        if unprefixed != lk and unprefixed in _CLIENT_KEYS:
            lk = unprefixed
        if lk == "retry_config":
            retry = v
        elif lk == "client_options" and isinstance(v, Mapping):
            client.update(v)
        elif lk == "client_kwargs" and isinstance(v, Mapping):  # s3fs style
            for ck, cv in v.items():
                config[_S3FS_KEYS.get(str(ck), str(ck))] = cv
        elif lk == "anon":
            config["skip_signature"] = bool(v)
        elif lk in _CLIENT_KEYS:
            client[lk] = v
        else:
            config[_S3FS_KEYS.get(lk, lk)] = v
    if scheme in ("s3", "s3a") and "allow_http" not in client:
        endpoint = next((config[k] for k in ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url",
                                             "aws_endpoint_url_s3") if k in config), None)
        if endpoint is None:
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") \
                or os.environ.get("AWS_ENDPOINT")
        if isinstance(endpoint, str) and endpoint.startswith("http://"):
            client["allow_http"] = True  # boto3 does the same: an http:// endpoint is plain HTTP
    if retry is None:
        from datetime import timedelta

        # object_store's default retries for 3 minutes: a wrong endpoint would hang that long
        retry = {"max_retries": 3, "retry_timeout": timedelta(seconds=30),
                 "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5),
                             "base": 2}}
    return config, client, retry


def _need(module: str, url: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise StoreError(f"{redact(url)}: reading this URL needs the {module.split('.')[0]} package: "
                         "pip install \"hlodump[cloud]\"") from None


#: A listing that gives no new object for this long is stopped (a store that repeats its
#: continuation token with empty pages would otherwise be asked for ever).
LIST_STALL_SECONDS = 60.0
#: How long a streamed GET may wait for its next piece before the stop flag is checked.
_POLL = 0.05


class ListingError(StoreError):
    """A listing that cannot be finished as it came: a key listed twice (the store repeated a
    continuation token), or no progress for ``LIST_STALL_SECONDS``."""


def _in_thread(make: Callable[[], Any], url: str) -> Any:
    """Iterate ``make()`` on a daemon thread, handing its items over a queue: the caller waits
    in short steps (Ctrl-C is seen within 0.1 s) and may stop at any item; the thread is left
    behind, never joined (a store stuck in a request cannot hold the process)."""
    import queue

    q: "queue.Queue[tuple[str, Any]]" = queue.Queue(maxsize=1)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in make():
                while not stop.is_set():
                    try:
                        q.put(("item", item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(("end", None))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            q.put(("error", e))

    threading.Thread(target=run, name="hlodump-list", daemon=True).start()
    import time

    last = time.monotonic()
    try:
        while True:
            try:
                kind, item = q.get(timeout=0.1)
            except queue.Empty:
                if time.monotonic() - last > LIST_STALL_SECONDS:
                    raise ListingError(f"{redact(url)}: the listing gave no new object for "
                                       f"{LIST_STALL_SECONDS:g} s (a store repeating its continuation token?); "
                                       "stopped") from None
                continue
            if kind == "end":
                return
            if kind == "error":
                raise item
            last = time.monotonic()
            yield item
    finally:
        stop.set()


def bounded_listing(make: Callable[[], Any], url: str, limit: int) -> list[tuple[str, int]]:
    """The (key, size) pairs of a listing whose pages ``make()`` yields (lists of obstore
    ``ObjectMeta``), bounded three ways: more than ``limit`` objects is ``WalkLimitError`` (an
    endless listing of new keys stops there, not at the memory limit); a key listed twice is
    ``ListingError`` (a store that repeats its continuation token gives the same page again:
    object stores list every key once, in order); no new object for ``LIST_STALL_SECONDS`` is
    ``ListingError`` too (the same token with empty pages). Ctrl-C stops it within 0.1 s."""
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    for batch in _in_thread(make, url):
        for m in batch:
            k = m["path"]
            if k in seen:
                raise ListingError(f"{redact(url)}: the store listed {k!r} twice (it repeated a continuation "
                                   "token?); listing stopped")
            seen.add(k)
            out.append((k, int(m["size"])))
            if len(out) > limit:
                raise WalkLimitError(f"{redact(url)}: more than {limit:,} objects; listing stopped "
                                     "(read_arrow(..., max_files=N) raises the limit)")
    return out


class ObjectSizeError(StoreError):
    """An object whose body is longer or shorter than its listed (or HEAD) size: it changed
    since it was listed, or the server's answer is not to be trusted. Not read."""


def get_bounded(store: Any, key: str, size: int, url: str, stop: Optional[threading.Event] = None) -> Any:
    """The object's ``size`` bytes, streamed (obstore ``GetResult.stream``) into one buffer
    allocated once for ``size`` bytes (``pyarrow.allocate_buffer``: a failure is
    ``MemoryError``, the pages are touched only as bytes arrive). What the server says its body
    is (``Content-Length``, ``Content-Range``) never sizes anything: a body longer than ``size``
    is stopped at ``size`` + 1 bytes and a shorter one is an error, both ``ObjectSizeError``
    (as a local file that changed while read). Big objects come in ``RANGE_STEP`` ranges
    fetched concurrently, each checked the same way. ``stop`` (Ctrl-C) ends it between pieces."""
    import obstore
    import pyarrow as pa

    if size < 0:
        raise ObjectSizeError(f"{redact(url)}: negative size {size} listed")
    try:
        buf = pa.allocate_buffer(size)
    except (MemoryError, pa.ArrowMemoryError) as e:
        raise MemoryError(f"{redact(url)}: {size:,} bytes do not fit in memory ({e})") from None
    view = memoryview(buf).cast("B") if size else memoryview(bytearray(0))

    def piece(start: int, end: int, ranged: bool) -> None:
        opts = {"range": (start, end)} if ranged else None
        res = obstore.get(store, key, options=opts) if opts else obstore.get(store, key)
        at = start
        for chunk in res.stream(min_chunk_size=min(max(end - start, 1), 8 << 20)):
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt
            n = len(chunk)
            if at + n > end:
                raise ObjectSizeError(f"{redact(url)}: the object is larger than the {size:,} bytes listed "
                                      "(changed since it was listed?); not read")
            view[at:at + n] = chunk
            at += n
        if at != end:
            raise ObjectSizeError(f"{redact(url)}: the object ended after {at:,} of the {size:,} bytes listed "
                                  "(changed since it was listed?); not read")

    if size < RANGE_THRESHOLD:
        piece(0, size, False)
    else:
        starts = list(range(0, size, RANGE_STEP))
        with ThreadPoolExecutor(min(8, len(starts)), thread_name_prefix="hlodump-range") as ex:
            futs = [ex.submit(piece, s0, min(s0 + RANGE_STEP, size), True) for s0 in starts]
            try:
                for f in futs:
                    f.result()
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
    return buf


class Backend:
    """One store (a bucket, an fsspec filesystem): lists and fetches. Picklable (the client is
    made again where it is used: Ray workers)."""

    root: str  # ``scheme://bucket`` (obstore) or the URL's protocol part (fsspec)

    def url(self, key: str) -> str:
        raise NotImplementedError

    def list(self, prefix: str, limit: int = MAX_FILES) -> list[tuple[str, int]]:
        """(key, size) of every object under ``prefix`` (a "directory": keys ``prefix/…``);
        more than ``limit`` is ``WalkLimitError``."""
        raise NotImplementedError

    def size(self, key: str) -> Optional[int]:
        """The size of object ``key``, or None when there is none."""
        raise NotImplementedError

    def glob_base(self, key: str) -> str:
        return key


class ObstoreBackend(Backend):
    def __init__(self, scheme: str, bucket: str, storage_options: Optional[Mapping[str, Any]]) -> None:
        self.scheme, self.bucket = scheme, bucket
        self.root = f"{scheme}://{bucket}"
        self.storage_options = dict(storage_options or {})
        self._store: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "bucket": self.bucket, "storage_options": self.storage_options}

    def __setstate__(self, s: dict[str, Any]) -> None:
        self.__init__(s["scheme"], s["bucket"], s["storage_options"])  # type: ignore[misc]

    @property
    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                store_mod = _need("obstore.store", self.root)
                config, client, retry = _obstore_options(self.scheme, self.storage_options)
                # object_store knows gs:// but not gcs:// (fsspec's spelling): same store
                scheme = _OBJECT_STORE_SCHEME.get(self.scheme, self.scheme)
                try:
                    self._store = store_mod.from_url(f"{scheme}://{self.bucket}/", config=config or None,
                                                     client_options=client or None, retry_config=retry)
                except BaseException as e:  # PanicException is a BaseException
                    _reraise_interrupts(e)
                    raise store_error(e, self.root, "configure the store") from None
            return self._store

    def url(self, key: str) -> str:
        return f"{self.root}/{key}"

    def list(self, prefix: str, limit: int = MAX_FILES) -> list[tuple[str, int]]:
        """Bounded (``bounded_listing``): at most ``limit`` objects, no key twice, never stuck."""
        import obstore

        store = self.store
        url = self.url(prefix)

        def batches() -> Any:
            try:
                yield from obstore.list(store, prefix.strip("/") or None, chunk_size=1000)
            except BaseException as e:
                _reraise_interrupts(e)
                raise store_error(e, url, "list") from None

        return bounded_listing(batches, url, limit)

    def size(self, key: str) -> Optional[int]:
        import obstore

        if not key or key.endswith("/"):
            return None
        try:
            return int(obstore.head(self.store, key)["size"])
        except BaseException as e:
            _reraise_interrupts(e)
            err = store_error(e, self.url(key), "read")
            if isinstance(err, FileNotFoundError) and "bucket" not in str(err):
                return None
            raise err from None

    def get_sync(self, key: str, size: int = 0) -> Any:
        """The object's bytes: an ``obstore.Bytes`` the tables point into (no copy); a big one
        in concurrent ranges, then joined (the parser needs a file contiguous: one copy).
        (obstore's blocking calls release the GIL and beat its asyncio ones here: collecting
        a 100 MB body with ``bytes_async`` took 3 s where ``bytes()`` took 0.4 s.) Streamed
        within the listed size (``get_bounded``): what the server says its body is never
        sizes a buffer."""
        return get_bounded(self.store, key, size, self.url(key), getattr(self, "stop", None))

    def put(self, key: str, data: Any) -> None:
        import obstore

        try:
            obstore.put(self.store, key, memoryview(data).cast("B"))  # no copy (pyarrow Buffers included)
        except BaseException as e:
            _reraise_interrupts(e)
            raise store_error(e, self.url(key), "write") from None


class FsspecBackend(Backend):
    def __init__(self, url: str, storage_options: Optional[Mapping[str, Any]]) -> None:
        fsspec_core = _need("fsspec.core", url)
        self.storage_options = dict(storage_options or {})
        from ..exceptions import UnsupportedURLError

        try:
            self.fs, _ = fsspec_core.url_to_fs(url, **self.storage_options)
        except ImportError as e:
            raise UnsupportedURLError(f"{redact(url)}: fsspec has no filesystem for this URL here ({e})") from None
        except BaseException as e:  # any protocol's own mistake: one line, never a traceback
            _reraise_interrupts(e)
            msg = redact(str(e).splitlines()[0] if str(e).strip() else type(e).__name__)
            raise UnsupportedURLError(f"{redact(url)}: fsspec cannot open this URL ({type(e).__name__}: {msg})") from None
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self.root = protocol

    def url(self, key: str) -> str:
        return str(self.fs.unstrip_protocol(key))

    def list(self, prefix: str, limit: int = MAX_FILES) -> list[tuple[str, int]]:
        try:
            found = self.fs.find(prefix, detail=True, withdirs=False)
        except FileNotFoundError:
            return []
        except Exception as e:
            raise store_error(e, self.url(prefix), "list") from None
        return [(k, int(v.get("size") or 0)) for k, v in found.items() if v.get("type", "file") != "directory"]

    def size(self, key: str) -> Optional[int]:
        try:
            info = self.fs.info(key)
        except FileNotFoundError:
            return None
        except Exception as e:
            raise store_error(e, self.url(key), "read") from None
        if info.get("type") == "directory":
            return None
        return int(info.get("size") or 0)

    def get_sync(self, key: str, size: int = 0) -> Any:
        return self.fs.cat_file(key)

    def put(self, key: str, data: Any) -> None:
        try:
            parent = posixpath.dirname(key)
            if parent:
                self.fs.makedirs(parent, exist_ok=True)
            self.fs.pipe_file(key, data if isinstance(data, bytes) else memoryview(data).cast("B").tobytes())
        except Exception as e:
            raise store_error(e, self.url(key), "write") from None


#: fsspec protocols that wrap another filesystem or a description of data rather than store
#: objects: not read (``UnsupportedURLError``).
_WRAPPERS = frozenset({"reference", "tar", "zip", "libarchive", "dir", "simplecache", "filecache", "blockcache",
                       "cached", "memmap", "generic", "dask", "jlab", "jupyter", "git", "github", "arrow_hdfs"})


def _check_url(url: str) -> None:
    """``UnsupportedURLError`` for the URLs hlodump does not read (see the module docstring)."""
    from ..exceptions import UnsupportedURLError

    shown = redact(url)
    if _CHAINED.match(url) or "::" in url:
        raise UnsupportedURLError(f"{shown}: chained fsspec URLs (a::b://…) are not read; name the inner URL "
                                  "itself (a local file, or an object store URL)")
    m = _SCHEME.match(url)
    scheme = m.group(1).lower() if m else ""
    if scheme in _WRAPPERS:
        raise UnsupportedURLError(f"{shown}: {scheme}:// is fsspec's view of other data (not a store of files): "
                                  "not read; name the file or the object store URL itself")


def backend_for(url: str, storage_options: Optional[Mapping[str, Any]] = None) -> tuple[Backend, str]:
    """(backend, key within it) for ``url``."""
    _check_url(url)
    m = _SCHEME.match(url)
    scheme = m.group(1).lower() if m else ""
    if scheme in OBSTORE_SCHEMES:
        rest = url[m.end():] if m else url
        bucket, _, key = rest.partition("/")
        userinfo, at, host = bucket.rpartition("@")
        if at:  # credentials in the URL: used (S3 key:secret), never kept in the bucket name
            bucket = host
            user, colon, secret = userinfo.partition(":")
            if scheme in ("s3", "s3a") and colon:
                from urllib.parse import unquote

                opts = dict(storage_options or {})
                opts.setdefault("aws_access_key_id", unquote(user))
                opts.setdefault("aws_secret_access_key", unquote(secret))
                storage_options = opts
        if not bucket:
            raise StoreError(f"{redact(url)}: no bucket in the URL")
        if not re.fullmatch(r"[A-Za-z0-9._\-]+", bucket):
            raise StoreError(f"{redact(url)}: {bucket!r} is not a bucket or container name")
        return ObstoreBackend(scheme, bucket, storage_options), key
    b = FsspecBackend(url, storage_options)
    key = b.fs._strip_protocol(url)
    return b, key


# ------------------------------------------------------------------------------ the plan


def fetch_all(plan: Plan, jobs: list[int], progress: Optional[bool]) -> dict[int, Any]:
    """Fetch ``jobs`` (indices of remote inputs): result bytes or the exception, by index."""
    out: dict[int, Any] = {}
    if not jobs:
        return out
    bar = None
    if progress is not False:
        from .progress import ProgressBar

        total = sum(o.size for o in (plan.inputs[i].origin for i in jobs) if isinstance(o, Remote))
        b = ProgressBar(len(jobs), total, force=bool(progress), label="fetching")
        bar = b if b.enabled else None
    tick: Callable[[int, int], None] = bar.update if bar is not None else (lambda f, n: None)
    lock = threading.Lock()

    stop = threading.Event()

    def one(i: int) -> tuple[int, Any]:
        r: Remote = plan.inputs[i].origin  # type: ignore[assignment]
        try:
            if stop.is_set():
                raise KeyboardInterrupt
            r.backend.stop = stop  # an obstore fetch checks it between pieces
            got: Any = r.backend.get_sync(r.key, r.size)  # type: ignore[attr-defined]
        except BaseException as e:  # noqa: BLE001 - reported per object (a PanicException too)
            _reraise_interrupts(e)
            got = e if isinstance(e, Exception) else StoreError(f"{redact(r.backend.url(r.key))}: cannot read: {_short(e)}")
        with lock:
            tick(1, r.size)
        return i, got

    ex = ThreadPoolExecutor(min(CONCURRENCY, len(jobs)), thread_name_prefix="hlodump-fetch")
    try:
        out.update(ex.map(one, jobs))
    except BaseException:  # Ctrl-C: do not wait for the objects not fetched yet
        stop.set()  # the fetches under way stop at their next piece
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        ex.shutdown(wait=True)
    finally:
        if bar is not None:
            bar.close()
    for i, got in out.items():  # out of memory is the environment's problem, not one object's
        if isinstance(got, MemoryError):
            raise got
    return out


def plan(path: Any, follow_links: bool = False, max_files: int = MAX_FILES,
         storage_options: Optional[Mapping[str, Any]] = None) -> Plan:
    """What ``read_arrow(path)`` reads when ``path`` holds URLs or buffers (local items are
    expanded by ``hlodump.io.paths``, with the same rules)."""
    if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 1:
        raise ValueError(f"max_files must be a positive integer (got {max_files!r})")
    from .paths import check_input

    check_input(path)
    items, prefix_dirs = _items(path)
    out = Plan()
    named: list[tuple[int, Any]] = []  # (index, directory key) of inputs named one by one
    for it in items:
        start = len(out.inputs)
        if _is_pair(it):
            name, buf = it
            if not name:
                raise ValueError("an in-memory input needs a non-empty name")
            shown = name.replace(os.sep, "/")
            out.add(walk_entry("", shown, True), shown, buf)
            named.append((start, ("mem", posixpath.dirname(shown))))
        elif is_url(it) and not os.path.lexists(it):
            try:
                _expand_url(it, prefix_dirs, max_files, storage_options, out)
            except (OSError, HlodumpError, ValueError) as e:
                raise _redacted(e) from None
            for i in range(start, len(out.inputs)):  # credentials never reach files.path/dump
                e = out.inputs[i]
                out.inputs[i] = dataclasses.replace(e, path=redact(e.path), shown=redact(e.shown),
                                                    error=e.error and redact(e.error), dump=redact(e.dump))
            if len(out.inputs) == start + 1 and out.inputs[start].explicit:
                named.append((start, ("url", posixpath.dirname(out.inputs[start].shown))))
        else:
            got, ds = expand_one(it, prefix_dirs, follow_links, max_files)
            for g, d in zip(got, ds):
                out.add(g, d, None)
            if len(got) == 1 and got[0][2]:
                named.append((start, ("file", os.path.dirname(os.path.abspath(got[0][0])))))
    # several named module files of one directory (prefix): one dump, that directory
    by_dir: dict[Any, list[int]] = {}
    for i, key in named:
        if MODULE_ENTRY.match(posixpath.basename(out.inputs[i].shown)):
            by_dir.setdefault(key, []).append(i)
    for idxs in by_dir.values():
        if len(idxs) > 1:
            for i in idxs:
                e = out.inputs[i]
                out.inputs[i] = dataclasses.replace(e, dump=posixpath.dirname(e.shown.replace(os.sep, "/")) or ".")
    return out


def _expand_url(url: str, prefix_dirs: bool, max_files: int, storage_options: Optional[Mapping[str, Any]],
                out: Plan) -> None:
    m = _SCHEME.match(url)
    if m and m.group(1).lower() == "file":
        _expand_file_url(url, prefix_dirs, max_files, out)
        return
    backend, key = backend_for(url, storage_options)
    shown_root = url.rstrip("/")
    if _GLOB.search(key):
        _expand_glob(backend, url, key, max_files, out)
        return
    # a "directory" (one listing) first: the common case costs one round trip
    listed = backend.list(key, max_files)
    base = key.rstrip("/")
    rel_of = (lambda k: k[len(base) + 1:] if base else k.lstrip("/"))
    found = sorted((rel_of(k), k, s) for k, s in listed if (not base or k.startswith(base + "/")) and rel_of(k))
    if found:
        _add_walk(backend, found, shown_root, prefix_dirs, max_files, url, out)
        return
    size = backend.size(key) if key and not url.endswith("/") else None
    if size is None:
        raise FileNotFoundError(2, "No such object or prefix", url)
    out.add((url, url, True, None), url, Remote(backend, key, size))


def _add_walk(backend: Backend, found: list[tuple[str, str, int]], shown_root: str, prefix_dirs: bool,
              max_files: int, url: str, out: Plan) -> None:
    """A listed prefix, as ``hlodump.io.paths`` walks a directory: (relative key, key, size), sorted."""
    if len(found) > max_files:
        raise WalkLimitError(f"{url}: more than {max_files:,} objects; listing stopped "
                             "(read_arrow(..., max_files=N) raises the limit)")
    prefix = shown_root + "/" if prefix_dirs else ""
    entries: list[Input] = []
    origins: list[Origin] = []
    for rel, k, size in found:
        if rel.endswith("/"):  # a "folder" marker: a directory, not a file (unless it holds bytes)
            if size == 0:
                continue
            entries.append(walk_entry(backend.url(k), prefix + rel, False,
                                  "OSError: object name ends with '/' (a folder marker with content); not read"))
            origins.append(None)
            continue
        entries.append(walk_entry(backend.url(k), prefix + rel, False))
        origins.append(Remote(backend, k, size))
    dumps = walk_dumps(entries, shown_root, len(prefix))
    for e, d, o in zip(entries, dumps, origins):
        out.add(e, d, o)


def _expand_file_url(url: str, prefix_dirs: bool, max_files: int, out: Plan) -> None:
    """``file://PATH``: the local path, memory-mapped like any local file; shown as the URL."""
    from urllib.parse import unquote, urlparse

    u = urlparse(url)
    if u.netloc not in ("", "localhost"):
        raise StoreError(f"{url}: file:// URLs name a local path (file:///abs/path)")
    local = unquote(u.path)
    if not os.path.lexists(local) and not _GLOB.search(local):
        raise FileNotFoundError(2, "No such file or directory", url)
    got, ds = expand_one(local, prefix_dirs, False, max_files)
    lroot = local.rstrip("/") or "/"
    uroot = url.rstrip("/")

    def rw(s: str) -> str:
        return uroot + s[len(lroot):] if s == lroot or s.startswith(lroot + "/") else s

    for (full, shown, explicit, err), d in zip(got, ds):
        out.add((full, rw(shown), explicit, err), rw(d), None)


def _glob_regex(pattern: str) -> "re.Pattern[str]":
    """A key glob as ``glob.glob(recursive=True)`` reads a path: ``*`` / ``?`` / ``[..]`` within a
    segment (not matching a leading ``.``), ``**`` any number of segments."""
    segs = pattern.split("/")
    out = []
    for i, s in enumerate(segs):
        last = i == len(segs) - 1
        if s == "**":
            out.append(r"(?:[^/.][^/]*/)*" if not last else r"(?:[^/.][^/]*(?:/[^/.][^/]*)*)?")
            continue
        rx = ""
        j = 0
        while j < len(s):
            c = s[j]
            if c == "*":
                rx += "[^/]*"
            elif c == "?":
                rx += "[^/]"
            elif c == "[":
                k = s.find("]", j + 2 if j + 1 < len(s) and s[j + 1] in "!]" else j + 1)
                if k < 0:
                    rx += re.escape(c)
                else:
                    body = s[j + 1:k]
                    body = "^" + body[1:] if body.startswith("!") else body
                    rx += "[" + body.replace("\\", "\\\\") + "]"
                    j = k
            else:
                rx += re.escape(c)
            j += 1
        if _GLOB.search(s) and not s.startswith("."):
            rx = r"(?!\.)" + rx
        out.append(rx + ("" if last else "/"))
    # ``a/**/b``: the ``**`` group ends with a slash; fold ``x/`` + ``(..)*`` correctly
    return re.compile("".join(out) + r"\Z")


def _expand_glob(backend: Backend, url: str, key: str, max_files: int, out: Plan) -> None:
    """A URL whose key has glob characters: list the part before them once, match the keys."""
    is_obs = isinstance(backend, ObstoreBackend)
    segs = key.split("/")
    fixed = []
    for s in segs:
        if _GLOB.search(s):
            break
        fixed.append(s)
    base = "/".join(fixed)
    lead = "/" if key.startswith("/") else ""  # fsspec paths may start with the root marker
    rx = _glob_regex(key.strip("/"))
    listed = [(k, size) for k, size in backend.list(base, max_files) if k.startswith(lead)]
    if len(listed) > max_files:
        raise WalkLimitError(f"{url}: more than {max_files:,} objects; listing stopped "
                             "(read_arrow(..., max_files=N) raises the limit)")
    # each key belongs to the shortest of its prefixes (or itself) that the glob matches
    matches: dict[str, list[tuple[str, str, int]]] = {}
    files: dict[str, tuple[str, int]] = {}
    for k, size in listed:
        parts = k[len(lead):].split("/")
        for n in range(1, len(parts) + 1):
            cand = lead + "/".join(parts[:n])
            if not rx.match(cand[len(lead):]):
                continue
            if n == len(parts):
                files[cand] = (k, size)
            else:
                matches.setdefault(cand, []).append(("/".join(parts[n:]), k, size))
            break
    to_url = backend.url if is_obs else (lambda k: str(backend.fs.unstrip_protocol(k)))  # type: ignore[attr-defined]
    for m in sorted(set(matches) | set(files)):
        if m in files:
            k, size = files[m]
            shown = to_url(k)
            d = (posixpath.dirname(shown) or ".") if MODULE_ENTRY.match(posixpath.basename(shown)) else shown
            out.add(walk_entry(shown, shown, False), d, Remote(backend, k, size))
        else:
            _add_walk(backend, sorted(matches[m]), to_url(m), True, max_files, url, out)


def put_bytes(url: str, data: Any, storage_options: Optional[Mapping[str, Any]] = None) -> None:
    """Write ``data`` (bytes-like) to ``url`` (an object-store or fsspec URL, or a local path)."""
    if not is_url(url) or url.startswith("file://"):
        p = url[len("file://"):] if url.startswith("file://") else url
        os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        return
    backend, key = backend_for(url, storage_options)
    backend.put(key, data)  # type: ignore[attr-defined]


def join(url: str, *parts: str) -> str:
    """``url`` / ``parts`` (a URL or a local path)."""
    if is_url(url):
        return "/".join([url.rstrip("/"), *parts])
    return os.path.join(url, *parts)
