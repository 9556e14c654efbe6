"""Custom-call bodies (e.g. Mosaic / Pallas kernels) decoded on demand.

Bodies stay zero-copy base64 text in ``instructions.backend_config`` (they can be megabytes per
line); ``decode_body`` decodes one when you need it.
"""

from __future__ import annotations

from typing import Any, Optional, Union

__all__ = ["decode_body"]


def decode_body(backend_config: Union[str, Any, None]) -> Optional[bytes]:
    """Base64-decode a custom call's body.

    ``backend_config`` is the ``instructions.backend_config`` value (a ``str``, or a pyarrow
    scalar of it). When it is a JSON object with a ``"body"`` string (searched depth-first, as in
    ``{"custom_call_config": {"body": "TUzvUgFN…"}}``), that string is decoded; otherwise the
    whole value. Returns None when the text is not base64. A Mosaic kernel decodes to MLIR
    bytecode, starting with ``b"ML\\xefR"``.
    """
    if backend_config is not None and not isinstance(backend_config, str):
        backend_config = backend_config.as_py()  # a pyarrow scalar
    try:
        from ._core import decode_body as fast
    except ImportError:  # pure-Python fallback (no native module built)
        return _decode_body_py(backend_config)
    return fast(backend_config)


def _find_body(obj: Any) -> Optional[str]:
    if isinstance(obj, dict):
        if isinstance(obj.get("body"), str):
            return obj["body"]
        children = obj.values()
    elif isinstance(obj, list):
        children = obj
    else:
        return None
    for v in children:
        hit = _find_body(v)
        if hit is not None:
            return hit
    return None


def _decode_body_py(backend_config: Optional[str]) -> Optional[bytes]:
    import base64
    import binascii
    import json

    if not backend_config:
        return None
    text = backend_config
    if text.lstrip().startswith("{"):
        try:
            body = _find_body(json.loads(text))
        except ValueError:
            body = None
        if body is not None:
            text = body
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
