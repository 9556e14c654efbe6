"""Memory spaces: which platform compiled a module, what each of its memory spaces (colors) is
called, and the per-space heap peaks that jax's ``peak_memory_in_bytes`` is made of.

A buffer assignment puts every allocation in a memory space, its *color*. Color 0 is the
device's main memory (HBM on TPU and GPU, host RAM on CPU); the others are what the backend
says: on TPU the on-chip VMEM and SMEM, scoped HBM, CMEM, pinned host memory; on GPU pinned host
memory (XLA's ``Layout::kHostMemorySpace``, color 5). Their names come from the dump's own
memory-usage report (``Memory Space: vmem (color=1)``); colors are not the same on every TPU
generation (TPU v4 has no VMEM color, and a scoped-HBM space ``hbm (color=3)``), so a color
alone names nothing.

Derived tables (see ``engine``):

* ``@platform`` — per module: ``tpu``, ``gpu``, ``cpu`` or ``unknown``. The file name says
  ``cpu`` / ``sm_9.0a_gpu`` (the backend tag); libtpu writes no tag, so TPU is known by its
  content: the memory-space names only TPUs have (vmem, smem, cmem) or tiled layouts ``:T(``.
* ``@spaces`` — per module and color: ``memory_space`` (the name we show), ``report_name`` (as
  the dump prints it), ``is_main`` (color 0: the headline space).
* ``@heap_peaks`` — per module and color: the most bytes live at once in the color's
  *temporary* allocations as XLA's heap simulator counts them (below).

The heap peak (``jax's peak_memory_in_bytes``): jax 0.12 asks XLA's ``ComputePeakMemorySizes``,
which replays the buffer assignment's heap-simulator traces (one per temporary allocation or
memory space) and adds the indefinite allocations of color 0 (parameters, live-out outputs and
constants, thread-local ones not counted). Checked on the 42 TPU and 17 GPU compiles that
tools/corpus/generators/gen_accel.py made and proto twins of some (their
``heap_simulator_traces``): the figure is the indefinite
bytes plus the **largest** of the traces' peaks. Text dumps hold no trace, so each trace's peak
is reproduced from the live ranges: per temporary slice, the live ranges of its values merged
(values that share a slice while live are one buffer, as a ``SHARE_WITH`` event makes them; on the other colors,
whose traces simulate each computation apart, only a value whose range lies inside another's),
tuple-shaped values left out (the heap simulator does not trace the index tables of tuples and
async-start tuples), inclusive live ranges. This equals XLA's trace on every GPU compile and on
every TPU compile but one host-offload compile (TPU7x), whose VMEM trace counts loop buffers
the live ranges do not pair the same way (tests/test_accel_memory.py lists it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pyarrow as pa

from .engine import Scope, derived

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["MAIN_COLOR", "HOST_MEMORY_SPACE", "space_name"]

MAIN_COLOR = 0  # the device's main memory in every backend
HOST_MEMORY_SPACE = 5  # xla::Layout::kHostMemorySpace: jax counts these allocations as host_*

# Names memory-usage reports print, as we show them.
_KNOWN = {"vmem": "VMEM", "smem": "SMEM", "cmem": "CMEM", "hbm": "HBM (scoped)", "host": "host",
          "sflag": "SFLAG", "sparse_core": "SparseCore"}


def space_name(platform: str, color: int, report_name: Optional[str]) -> str:
    """The name a memory space is shown under: the main memory by what it is on the platform,
    pinned host memory by XLA's constant, else the dump's own name."""
    if color == MAIN_COLOR:
        return {"tpu": "HBM", "gpu": "device", "cpu": "host RAM"}.get(platform, "main")
    if color == HOST_MEMORY_SPACE:
        # XLA's host memory space on every backend: jax counts it in host_* (libtpu's report
        # calls it "cmem"; what a program offloads with memory_kind="pinned_host" lands there)
        return "host (pinned)"
    if report_name:
        if report_name.startswith("color_"):
            return f"color {color}"
        return _KNOWN.get(report_name, report_name)
    return f"color {color}"


@derived("platform")
def _platform(sc: Scope) -> pa.Table:
    has_report = sc.eng.has("memory_report")
    report = ("select distinct m.module from memory_report r join @modmap m using (file_id) "
              "where r.memory_space in ('vmem', 'smem', 'cmem')") if has_report else \
        "select null::varchar as module where false"
    return sc.arrow(f"""
        with b as (select module, bool_or(backend like '%gpu%') as gpu, bool_and(backend = 'cpu') as cpu
                   from (select m.module, f.backend::varchar as backend
                         from files f join @modmap m using (file_id) where f.backend is not null)
                   group by module),
             tiled as (select distinct module from @asg where shape like '%:T(%'),
             onchip as ({report}),
             mods as (select distinct module from @modmap)
        select mods.module,
               case when b.gpu then 'gpu'
                    when mods.module in (select module from onchip) or mods.module in (select module from tiled)
                        then 'tpu'
                    when b.cpu then 'cpu'
                    else 'unknown' end as platform
        from mods left join b using (module)""")


@derived("spaces")
def _spaces(sc: Scope) -> pa.Table:
    has_report = sc.eng.has("memory_report")
    names = ("select m.module, r.color, any_value(r.memory_space::varchar) as report_name "
             "from memory_report r join @modmap m using (file_id) where r.color is not null group by all") \
        if has_report else "select null::varchar as module, null::int as color, null::varchar as report_name where false"
    t = sc.arrow(f"""
        with c as (select distinct module, coalesce(color, 0)::int as color from @alloc),
             n as ({names})
        select c.module, c.color, p.platform, n.report_name
        from c join @platform p using (module) left join n using (module, color)
        order by c.module, c.color""")
    shown = [space_name(p, c, r) for p, c, r in zip(t.column("platform").to_pylist(), t.column("color").to_pylist(),
                                                   t.column("report_name").to_pylist())]
    t = t.append_column("memory_space", pa.array(shown, pa.string()))
    return t.append_column("is_main", pa.array([c == MAIN_COLOR for c in t.column("color").to_pylist()]))


@derived("heap_peaks")
def _heap_peaks(sc: Scope) -> pa.Table:
    """Per module and color: the largest heap (bytes and logical bytes at that step) of its
    temporaries, counted as XLA's heap-simulator trace counts them (see the module docstring)."""
    return sc.arrow("""
        with v as (select module, color, allocation, "offset" as off, size as sz, logical_bytes as lg,
                          start as s, "end" as e
                   from @buffers
                   where category = 'temporary' and start is not null and "end" is not null
                     and coalesce(shape, '') not like '(%'),
             o as (select *, max(e) over (partition by module, color, allocation, off, sz order by s, e
                                          rows between unbounded preceding and 1 preceding) as pe
                   from v),
             -- one buffer: color 0's overlapping values; elsewhere a value inside another's range
             isl as (select *, sum(case when pe is null or (color = 0 and s > pe) or (color <> 0 and e > pe)
                                        then 1 else 0 end)
                                  over (partition by module, color, allocation, off, sz order by s, e
                                        rows unbounded preceding) as g
                     from o),
             buf as (select module, color, allocation, off, sz, max(least(coalesce(lg, sz), sz)) as lg,
                            min(s) as s, max(e) as e
                     from isl group by module, color, allocation, off, sz, g),
             ev as (select module, color, s as t, sz as d, lg as dl from buf
                    union all select module, color, e + 1 as t, -sz as d, -lg as dl from buf),
             g as (select module, color, t, sum(d) as d, sum(dl) as dl from ev group by all),
             run as (select module, color, t, sum(d) over w as live, sum(dl) over w as live_logical
                     from g window w as (partition by module, color order by t rows unbounded preceding))
        select module, color, max(live)::bigint as heap_peak,
               -- the first step of the peak (XLA records a peak when the heap grows past it)
               arg_max(live_logical, struct_pack(a := live, b := -t))::bigint as heap_peak_logical,
               arg_max(t, live)::bigint as heap_peak_step
        from run group by module, color""")
