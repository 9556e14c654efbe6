"""The custom calls whose cost is known, and their rules (issue 47).

XLA's base ``HloCostAnalysis::HandleCustomCall`` counts every custom call as unknown (flops,
bytes accessed and optimal seconds −1). Some targets say what they cost, and the compiler that
made them uses it:

* a Pallas/Mosaic TPU kernel (``tpu_custom_call``) carries the kernel's own ``CostEstimate``
  (``pl.CostEstimate``, written by jax's ``pallas_call``) in its ``backend_config`` as
  ``"cost_estimate":{"flops":"…","transcendentals":"…","bytes_accessed":"…"}``: the TPU
  compiler's cost analysis takes those three figures, and the operand and output bytes as for
  any instruction (checked against ``Compiled.cost_analysis()`` of libtpu, tests/data/accel);
* cuBLAS gemms (``__cublas$gemm``, ``__cublas$lt$matmul``, ``__cublas$lt$matmul$f8``):
  ``GpuHloCostAnalysis::HandleCustomCall`` (xla/service/gpu/model/gpu_hlo_cost_analysis.cc)
  counts ``GetDotFlops(operand 0, output (its first part when a tuple), the dot dimensions of
  gemm_backend_config)``, bytes as ``Preprocess`` (alpha/beta and epilogues left out, as XLA);
* cuDNN convolutions (``__cudnn$conv…``): ``GetConvolutionFlops`` on the custom call's window
  and ``dim_labels`` with the result's first part, and only that part as output bytes (the second
  is cuDNN's scratch buffer);
* ``AllocateBuffer`` in a TPU module: the TPU compiler counts it as nothing (no figure, no −1).

jax's ``Compiled.cost_analysis()`` on GPU runs the base class (the PJRT GPU client), which leaves
the cuBLAS/cuDNN calls at −1; these figures are XLA's GPU rules instead, the ones its fusion and
scheduling passes use. Any other target stays unknown and is counted as such."""

from __future__ import annotations

import json
import re
from typing import Any, Optional

CUBLAS_GEMMS = frozenset({"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"})
CUDNN_CONVS = frozenset({"__cudnn$convForward", "__cudnn$convBackwardInput", "__cudnn$convBackwardFilter",
                         "__cudnn$convBiasActivationForward", "__cudnn$convForwardGraph"})
TPU_KERNEL = "tpu_custom_call"
ALLOCATE = "AllocateBuffer"

# the estimate is a flat object of quoted int64s (protobuf JSON): a regular expression finds it
# without parsing a backend_config that also holds the kernel's body (megabytes of base64)
_ESTIMATE = re.compile(r'"cost_estimate"\s*:\s*\{([^{}]*)\}')
_FIELD = re.compile(r'"(flops|transcendentals|bytes_accessed)"\s*:\s*"?(-?\d+)"?')


def pallas_estimate(backend_config: Optional[str]) -> Optional[dict[str, int]]:
    """The Pallas kernel's ``CostEstimate`` in a ``tpu_custom_call``'s backend_config, or None
    (a kernel written without one: the TPU compiler has no figure for it either)."""
    if not backend_config:
        return None
    m = _ESTIMATE.search(backend_config)
    if m is None:
        return None
    fields = {k: int(v) for k, v in _FIELD.findall(m.group(1))}
    return fields if "flops" in fields else None


def gemm_dims(backend_config: Optional[str]) -> Optional[list[int]]:
    """The lhs contracting dimensions of a cuBLAS call's ``gemm_backend_config`` (all
    ``GetDotFlops`` reads besides the shapes), or None when the config says none."""
    if not backend_config:
        return None
    try:
        cfg = json.loads(backend_config)
    except ValueError:
        return None
    gemm = cfg.get("gemm_backend_config", cfg) if isinstance(cfg, dict) else None
    dnums = gemm.get("dot_dimension_numbers") if isinstance(gemm, dict) else None
    if not isinstance(dnums, dict):
        return None
    return [int(x) for x in dnums.get("lhs_contracting_dimensions", [])]


def known(target: Optional[str], backend_config: Optional[str], tpu: bool) -> bool:
    """Whether a custom call with this target and config has a rule here (else it is unknown)."""
    if target in CUBLAS_GEMMS:
        return gemm_dims(backend_config) is not None
    if target in CUDNN_CONVS:
        return True
    if target == TPU_KERNEL:
        return pallas_estimate(backend_config) is not None
    return target == ALLOCATE and tpu


def rule_of(target: Optional[str]) -> str:
    """Which rule a known target takes: 'gemm', 'conv', 'pallas' or 'free'."""
    if target in CUBLAS_GEMMS:
        return "gemm"
    if target in CUDNN_CONVS:
        return "conv"
    return "pallas" if target == TPU_KERNEL else "free"


def estimate_props(est: dict[str, int]) -> dict[str, Any]:
    """The three figures a Pallas estimate replaces (the property names of cost_keys)."""
    from .cost_keys import BYTES, FLOPS, TRANS

    out: dict[str, Any] = {FLOPS: est["flops"], TRANS: est.get("transcendentals", 0)}
    if "bytes_accessed" in est:
        out[BYTES] = est["bytes_accessed"]
    return out
