"""Custom-call bodies: detection, base64, kernel name (mirrors ``src/hlo/custom_call.rs``)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any


# ----------------------------------------------------------------------------- custom calls

_B64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")
MLIR_MAGIC = b"ML\xefR"


def _find_key(obj: Any, key: str) -> str | None:
    """Depth-first (printed order) search for the first string value under ``key``."""
    if isinstance(obj, dict):
        v = obj.get(key)
        if isinstance(v, str):
            return v
        for v in obj.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None


def _b64decode(s: str) -> bytes | None:
    """Strict standard base64 (length multiple of 4, '=' padding only at the end)."""
    if len(s) % 4 or _B64_RE.fullmatch(s) is None:
        return None
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_body(backend_config: str | None) -> bytes | None:
    """The decoded custom-call body: base64 of the JSON ``"body"`` string when the config is a
    JSON object that has one (searched depth-first, e.g. ``custom_call_config.body``), else of
    the whole config. None when that text is not base64."""
    return _b64decode(_body_text(backend_config)[0])


def _body_text(backend_config: str | None) -> tuple[str, Any]:
    """(body text, parsed JSON object or None)."""
    if not backend_config:
        return "", None
    obj = None
    if backend_config.lstrip().startswith("{"):
        try:
            obj = json.loads(backend_config)
        except ValueError:
            obj = None
    if isinstance(obj, dict):
        body = _find_key(obj, "body")
        if body is not None:
            return body, obj
        return backend_config, obj
    return backend_config, None


def custom_call_info(backend_config: str | None) -> dict[str, Any]:
    """body_length, decoded_length, format, kernel_name for the ``custom_calls`` table."""
    body, obj = _body_text(backend_config)
    has_body = isinstance(obj, dict) and _find_key(obj, "body") is not None
    decoded = _b64decode(body) if body else None
    if not backend_config:
        fmt = "empty"
        decoded_length = None
    else:
        decoded_length = len(decoded) if decoded is not None else None
        if decoded is not None and decoded.startswith(MLIR_MAGIC):
            fmt = "mlir_bytecode"
        elif isinstance(obj, dict) and not has_body:
            fmt = "json"
        else:
            fmt = "text"
    kernel = None
    if isinstance(obj, dict):
        kernel = _find_key(obj, "kernel_name")
        if kernel is None:
            kernel = _find_key(obj, "name")
    return {
        "body_length": len(body.encode("utf-8")),
        "decoded_length": decoded_length,
        "format": fmt,
        "kernel_name": kernel,
    }
