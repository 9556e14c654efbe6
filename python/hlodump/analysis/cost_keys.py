"""The words every cost rule writes in: XLA's property names and keys (``flops``, ``bytes
accessed0{}``, ``bytes accessedout{1}`` …), the small integer each key gets in a run (``_Keys``; the
five fixed ones ``K_*``) and the opcode classes the column rules (``cost_vector``) and the Python
handlers (``cost_handlers``) share. Apart so that both rule files and the driver (``cost_rules``)
take them from below, none from another."""

from __future__ import annotations

from functools import lru_cache

FLOPS = "flops"
TRANS = "transcendentals"
BYTES = "bytes accessed"
SECONDS = "optimal_seconds"
UTIL = "utilization"


def _ix(index: tuple[int, ...]) -> str:
    return "{" + ",".join(str(i) for i in index) + "}"


@lru_cache(maxsize=4096)
def operand_bytes_key(i: int, index: tuple[int, ...] = ()) -> str:
    """XLA's ``GetOperandBytesAccessedKey``: ``bytes accessed0{}``, ``bytes accessed1{0}``."""
    return f"{BYTES}{i}{_ix(index)}"


@lru_cache(maxsize=4096)
def operand_util_key(i: int, index: tuple[int, ...] = ()) -> str:
    return f"{UTIL}{i}{_ix(index)}"


@lru_cache(maxsize=4096)
def output_bytes_key(index: tuple[int, ...] = ()) -> str:
    """XLA's ``GetOutputBytesAccessedKey``: ``bytes accessedout{}``, ``bytes accessedout{1}``."""
    return f"{BYTES}out{_ix(index)}"


OUT = output_bytes_key()

_TRANSCENDENTAL = frozenset({
    "exponential", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt", "tanh", "sine", "cosine",
    "exponential-minus-one", "log-plus-one", "atan2", "tan", "erf",
})
_ELEMENTWISE = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "count-leading-zeros", "compare", "complex", "convert",
    "cosine", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite",
    "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or",
    "popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz",
    "round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor",
    "stochastic-convert", "bitcast-convert",
})
# Opcodes XLA accounts as "no computation, no memory traffic".
_FREE = frozenset({"domain", "after-all", "add-dependency"})


class _Keys:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        for k in (FLOPS, TRANS, BYTES, SECONDS, OUT):
            self.id(k)

    def id(self, k: str) -> int:
        i = self.ids.get(k)
        if i is None:
            i = self.ids[k] = len(self.names)
            self.names.append(k)
        return i


K_FLOPS, K_TRANS, K_BYTES, K_SECONDS, K_OUT = range(5)
