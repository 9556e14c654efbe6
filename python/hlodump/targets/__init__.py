"""``hlodump.target(name)``: compile-only jax devices for a TPU or GPU this machine does not have.

jax compiles for a *topology description* without the hardware: TPU topologies come from libtpu
(``pip install "hlodump[tpu]"``: ``jax[tpu]``), GPU ones from the CUDA plugin
(``pip install "hlodump[cuda]"``: ``jax[cuda12]``) given a ``GpuTargetConfigProto`` — the GPU's
description, shipped here (``h100_sxm.txtpb``, ``a100_sxm_80.txtpb``, ``h200.txtpb``,
``b200.txtpb``). Arrays placed on these devices are ``jax.ShapeDtypeStruct``s with a sharding: nothing is allocated, the
compile is all there is (``hlodump.capture(fn, *args, target=...)``).

Names (``TARGET_NAMES`` lists the kinds; ``parse_target`` checks one without jax):

* ``tpu:<generation>:<topology>[*<slices>]`` — ``tpu:v5e:2x4`` (8 chips), ``tpu:v5p:4x4x4``,
  ``tpu:v6e:8x8``, ``tpu:v5e:2x2*4`` (four slices of 2x2). Generations: v4, v5e, v5p, v6e,
  tpu7x. The topology is libtpu's (``AxB`` for v5e/v6e, ``AxBxC`` for v4/v5p/tpu7x).
* ``gpu:<model>x<gpus per host>[x<hosts>]`` — ``gpu:h100x8`` (one host of 8 H100s),
  ``gpu:a100x8``, ``gpu:h100x8x8`` (8 hosts of 8). Models: h100, a100, h200, b200.

The environment the plugins need is set inside ``target()`` (only variables the user has not set):
``TPU_SKIP_MDS_QUERY=1`` (no metadata-server query: this is not a TPU VM),
``ALLOW_MULTIPLE_LIBTPU_LOAD=1``, ``TPU_WORKER_ID=0`` and ``TPU_WORKER_HOSTNAMES=localhost``
(none of them on a TPU VM: a machine with ``/dev/accel*`` or ``/dev/vfio/N``); for GPU ``JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1`` (no CUDA driver
to check) and, when jax's backends are not initialized yet, no ``JAX_PLATFORMS`` was given and
the machine has no NVIDIA device, jax's platforms set to ``cpu`` (the CUDA plugin would
otherwise try to open a GPU).
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

__all__ = ["Target", "TargetError", "target", "parse_target", "TargetSpec", "TPU_GENERATIONS", "GPU_MODELS",
           "TARGET_NAMES"]

HERE = os.path.dirname(os.path.abspath(__file__))

#: TPU generation in a target name → libtpu's topology prefix and the dimensions its topology has.
TPU_GENERATIONS: dict[str, tuple[str, int]] = {"v4": ("v4", 3), "v5e": ("v5e", 2), "v5p": ("v5p", 3),
                                                "v6e": ("v6e", 2), "tpu7x": ("TPU7x", 3)}

#: GPU model in a target name → the target config shipped in this folder.
GPU_MODELS: dict[str, str] = {"h100": "h100_sxm.txtpb", "a100": "a100_sxm_80.txtpb", "h200": "h200.txtpb",
                              "b200": "b200.txtpb"}

#: The forms of a target name, with an example each (what a wrong name's error lists).
TARGET_NAMES: tuple[str, ...] = (
    "tpu:<v4|v5e|v5p|v6e|tpu7x>:<topology>[*<slices>]  e.g. tpu:v5e:2x4, tpu:v5p:4x4x4, tpu:v6e:8x8, tpu:v5e:2x2*4",
    "gpu:<h100|a100|h200|b200>x<gpus per host>[x<hosts>] e.g. gpu:h100x8, gpu:a100x8, gpu:h100x8x8",
)

_TPU = re.compile(r"^tpu:([A-Za-z0-9]+):([0-9]+(?:x[0-9]+)*)(?:\*([0-9]+))?$")
_GPU = re.compile(r"^gpu:([a-z0-9]+?)x([0-9]+)(?:x([0-9]+))?$")


class TargetError(ValueError):
    """A target name that names no target, or a target whose jax plugin is not installed
    (the message names the ``pip install "hlodump[...]"`` line)."""


@dataclass(frozen=True)
class TargetSpec:
    """A parsed target name (no jax needed): ``platform`` ``tpu`` | ``gpu``, and
    ``topology`` as the plugin takes it (libtpu's ``v5e:2x4``; the CUDA plugin's
    ``<partitions>x<hosts>x<gpus per host>``), ``slices`` (TPU), ``model`` (GPU), ``devices``."""

    name: str
    platform: str
    topology: str
    devices: int
    slices: int = 1
    model: str = ""
    hosts: int = 1


def _names() -> str:
    return "valid names: " + "; ".join(TARGET_NAMES)


def parse_target(name: str) -> TargetSpec:
    """Check a target name and say what it means; ``TargetError`` listing the valid forms
    when it names nothing."""
    if not isinstance(name, str):
        raise TargetError(f"a target is a name like 'tpu:v5e:2x4' or 'gpu:h100x8', not {type(name).__name__}")
    text = name.strip()
    low = text.lower()
    m = _TPU.match(low)
    if m:
        gen, topo, slices = m.group(1), m.group(2), int(m.group(3) or 1)
        if gen not in TPU_GENERATIONS:
            raise TargetError(f"unknown TPU generation {gen!r} in target {name!r} (known: "
                              f"{', '.join(TPU_GENERATIONS)}); {_names()}")
        prefix, ndim = TPU_GENERATIONS[gen]
        dims = [int(x) for x in topo.split("x")]
        if len(dims) != ndim:
            raise TargetError(f"target {name!r}: a {gen} topology has {ndim} dimensions "
                              f"({'x'.join(['A'] * ndim)}), not {len(dims)}; {_names()}")
        if min(dims) < 1 or slices < 1:
            raise TargetError(f"target {name!r}: every dimension and the slice count must be at least 1")
        n = slices
        for d in dims:
            n *= d
        return TargetSpec(name=f"tpu:{gen}:{topo}" + (f"*{slices}" if slices > 1 else ""), platform="tpu",
                          topology=f"{prefix}:{topo}", devices=n, slices=slices)
    m = _GPU.match(low)
    if m:
        model, per_host, hosts = m.group(1), int(m.group(2)), int(m.group(3) or 1)
        if model not in GPU_MODELS:
            raise TargetError(f"unknown GPU model {model!r} in target {name!r} (known: {', '.join(GPU_MODELS)}); "
                              f"{_names()}")
        if per_host < 1 or hosts < 1:
            raise TargetError(f"target {name!r}: the GPU and host counts must be at least 1")
        return TargetSpec(name=f"gpu:{model}x{per_host}" + (f"x{hosts}" if hosts > 1 else ""), platform="gpu",
                          topology=f"1x{hosts}x{per_host}", devices=per_host * hosts, model=model, hosts=hosts)
    raise TargetError(f"unknown target {name!r}; {_names()}")


def gpu_target_config(model: str) -> str:
    """The ``GpuTargetConfigProto`` text shipped for a GPU model (``h100``, ``a100``, ``h200``, ``b200``)."""
    with open(os.path.join(HERE, GPU_MODELS[model]), encoding="utf-8") as f:
        return f.read()


@dataclass(frozen=True)
class Target:
    """Compile-only devices of a named target (``hlodump.target(name)``).

    ``name`` (as parsed, lower case), ``platform`` (``tpu`` | ``gpu``), ``devices`` (jax
    compile-only devices: shard ``ShapeDtypeStruct``s over them; nothing runs there),
    ``device_kind`` (jax's), ``spec`` (the parsed name). ``mesh(...)`` builds a ``Mesh``."""

    name: str
    platform: str
    devices: tuple[Any, ...] = field(repr=False)
    device_kind: str
    spec: TargetSpec = field(repr=False)

    def mesh(self, axes: Union[None, dict[str, int], Sequence[tuple[str, int]]] = None, **sizes: int) -> Any:
        """A ``jax.sharding.Mesh`` over every device of the target, from axis sizes:
        ``t.mesh(data=4, model=2)`` or ``t.mesh({"data": 4, "model": 2})``; one size may be
        ``-1`` (the devices left). The product must be the device count. Without axes: one
        axis ``"x"`` over all devices. TPU devices are laid out by jax's ``mesh_utils`` (the
        physical topology: neighbours on a torus axis), GPU ones in id order, hosts outermost."""
        import numpy as np
        from jax.sharding import Mesh

        pairs = list((axes.items() if isinstance(axes, dict) else axes) if axes is not None else []) + list(sizes.items())
        if not pairs:
            pairs = [("x", len(self.devices))]
        names = [str(k) for k, _ in pairs]
        if len(set(names)) != len(names):
            raise TargetError(f"mesh axes repeat a name: {names}")
        dims = [int(v) for _, v in pairs]
        n = len(self.devices)
        if dims.count(-1) > 1 or any(d == 0 or d < -1 for d in dims):
            raise TargetError(f"mesh axis sizes must be positive (one may be -1): {dict(pairs)}")
        if -1 in dims:
            rest = 1
            for d in dims:
                rest *= d if d != -1 else 1
            if n % rest:
                raise TargetError(f"{self.name} has {n} devices, not a multiple of {rest} ({dict(pairs)})")
            dims[dims.index(-1)] = n // rest
        total = 1
        for d in dims:
            total *= d
        if total != n:
            raise TargetError(f"mesh {dict(zip(names, dims))} has {total} devices; {self.name} has {n}")
        if self.platform == "tpu":
            try:
                from jax.experimental import mesh_utils

                if self.spec.slices > 1:
                    # slices outermost: the first axis that the slice count divides spans them
                    per = [d for d in dims]
                    for i, d in enumerate(per):
                        if d % self.spec.slices == 0:
                            dcn = [1] * len(dims)
                            dcn[i] = self.spec.slices
                            per[i] = d // self.spec.slices
                            arr = mesh_utils.create_hybrid_device_mesh(per, dcn, list(self.devices))
                            return Mesh(arr, tuple(names))
                    raise TargetError(f"{self.name}: no mesh axis of {dict(zip(names, dims))} is a multiple of "
                                      f"the {self.spec.slices} slices")
                return Mesh(mesh_utils.create_device_mesh(dims, list(self.devices)), tuple(names))
            except TargetError:
                raise
            except Exception:  # a shape mesh_utils cannot lay out on this topology: id order
                pass
        return Mesh(np.array(self.devices, dtype=object).reshape(dims), tuple(names))


#: What libtpu needs on a machine that is not a TPU VM, to describe a topology without asking
#: a metadata server or a runtime (each set only where the user has not set it).
TPU_ENV = {"TPU_SKIP_MDS_QUERY": "1", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
           # without these libtpu logs an error about the TPU_WORKER_HOSTNAMES it guessed
           "TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "localhost"}


def _on_tpu_vm() -> bool:
    """A machine with TPU chips attached (their device files): libtpu's runtime environment is
    then left as it is."""
    import glob

    return bool(glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*"))


def _set_env(platform: str) -> None:
    if platform == "tpu":
        if not _on_tpu_vm():
            for k, v in TPU_ENV.items():
                os.environ.setdefault(k, v)
        return
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")


def _has_tpu_plugin() -> bool:
    if os.environ.get("TPU_LIBRARY_PATH"):
        return True
    try:
        return importlib.util.find_spec("libtpu") is not None
    except (ImportError, ValueError):
        return False


def _has_cuda_plugin() -> bool:
    for name in ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13", "jax_cuda12_plugin", "jax_cuda13_plugin"):
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def _jax(spec: TargetSpec) -> Any:
    extra = "tpu" if spec.platform == "tpu" else "cuda"
    try:
        import jax
        from jax.experimental import topologies  # noqa: F401
    except ImportError as e:
        raise TargetError(f"target {spec.name} needs jax with {'libtpu' if extra == 'tpu' else 'the CUDA plugin'}: "
                          f'pip install "hlodump[{extra}]" ({e})') from None
    return jax


_CACHE: dict[str, Target] = {}


def target(name: Union[str, Target]) -> Target:
    """Compile-only devices for a named target (see the module docstring for the names):
    ``hlodump.target("tpu:v5e:2x4")``, ``hlodump.target("gpu:h100x8")``. Needs libtpu for TPU
    (``pip install "hlodump[tpu]"``) and the CUDA plugin for GPU (``"hlodump[cuda]"``);
    ``TargetError`` (a ``ValueError``) names the extra when it is missing, and lists the valid
    names when ``name`` is none. The same name gives the same ``Target`` (cached)."""
    if isinstance(name, Target):
        return name
    spec = parse_target(name)
    hit = _CACHE.get(spec.name)
    if hit is not None:
        return hit
    _set_env(spec.platform)
    if spec.platform == "tpu":
        if not _has_tpu_plugin():
            raise TargetError(f'target {spec.name} needs libtpu, which is not installed: pip install "hlodump[tpu]" '
                              "(jax[tpu]: libtpu compiles for any TPU topology on a CPU-only machine)")
        jax = _jax(spec)
        from jax.experimental import topologies

        try:
            desc = topologies.get_topology_desc(spec.topology, "tpu", num_slices=spec.slices)
        except Exception as e:  # libtpu rejects the topology (a shape it has no such slice of)
            raise TargetError(f"target {spec.name}: libtpu has no topology {spec.topology!r}"
                              + (f" in {spec.slices} slices" if spec.slices > 1 else "")
                              + f": {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    else:
        if not _has_cuda_plugin():
            raise TargetError(f'target {spec.name} needs jax\'s CUDA plugin, which is not installed: '
                              'pip install "hlodump[cuda]" (jax[cuda12]: compiles for a GPU on a machine without one)')
        jax = _jax(spec)
        _cpu_platforms(jax)
        from jax.experimental import topologies

        try:
            desc = topologies.get_topology_desc(platform="cuda", topology=spec.topology,
                                                target_config=gpu_target_config(spec.model))
        except Exception as e:
            raise TargetError(f"target {spec.name}: the CUDA plugin made no topology {spec.topology!r}: "
                              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    devices = tuple(desc.devices)
    if len(devices) != spec.devices:
        raise TargetError(f"target {spec.name}: the plugin made {len(devices)} devices, the name says {spec.devices}")
    t = Target(name=spec.name, platform=spec.platform, devices=devices,
               device_kind=str(getattr(devices[0], "device_kind", "")), spec=spec)
    _CACHE[spec.name] = t
    return t


def _cpu_platforms(jax: Any) -> None:
    """GPU compile-only: keep jax from opening a GPU it does not have (only if nothing chose the
    platforms yet and the machine has no NVIDIA device)."""
    if os.environ.get("JAX_PLATFORMS") or os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl"):
        return
    try:
        from jax._src import xla_bridge as xb

        if xb.backends_are_initialized():
            return
        jax.config.update("jax_platforms", "cpu")
    except Exception:  # a jax without these internals: leave the platforms to jax
        return


def resolve(t: Optional[Union[str, Target]]) -> Optional[Target]:
    """``None``, a ``Target`` or a name → ``Target`` (``capture``'s ``target=``)."""
    return None if t is None else target(t)
