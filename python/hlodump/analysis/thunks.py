"""GPU thunks joined to the HLO they run (issue 47, item 6).

A kernel name in a profile (``loop_reduce_fusion_1``) is the thunk's, not the HLO instruction's:
XLA sanitizes the instruction's name into the kernel's (``.`` → ``_``) and may reuse one kernel
for several instructions. Older thunk sequences print the instruction (the profile annotation)
on the thunk's line (``thunks.instruction``); jax 0.12 prints only the kernel and the thunk's
id (``thunks.printed_id``), and writes the instruction of each id into
``*.thunk_metadata.txt`` (the ``thunk_metadata`` table). The two files are parsed apart (in
parallel, maybe in different reads), so the join is here, per module, not in the core.

``thunk_instructions`` gives every thunk its instruction, first as printed, then by the
module's thunk metadata (module and id), then, where neither names it, by the kernel name:
the one instruction of the module's after-optimizations HLO whose sanitized name is the
kernel's (``instruction_from`` says which). The instruction is then looked up in that HLO: its
computation, opcode and fusion kind; ``fusion`` names the fusion a thunk runs or runs inside
(a copy nested in a ``kDynamicSliceFusion`` has no metadata of its own). Join ``costs`` on
(``module``, ``instruction``) for its FLOPs and bytes.
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING

import pyarrow as pa

from .engine import Scope, derived
from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["thunk_instructions"]


@derived("thunk_meta")
def _thunk_meta(sc: Scope) -> pa.Table:
    """(module, thunk_id, instruction): the module's thunk metadata, an id kept only where it
    names one instruction (protobuf omits id 0: thunks a thunk pass made have no id)."""
    return sc.arrow("""
        select m.module, tm.thunk_id, any_value(tm.instruction::varchar) as instruction
        from thunk_metadata tm join @modmap m using (file_id)
        where tm.thunk_id is not null and tm.instruction is not null and tm.instruction::varchar <> ''
        group by all having count(distinct tm.instruction::varchar) = 1""")


@derived("thunk_hlo_names")
def _thunk_hlo_names(sc: Scope) -> pa.Table:
    """(module, name, kernel, computation, opcode, fusion_kind): the instructions of each
    module's after-optimizations HLO, one row per name (a text and a proto dump of the same
    module agree; a name the module holds twice differently is left out), ``kernel`` the name
    XLA gives a kernel emitted for it (``SanitizeFunctionName``: every byte but letters, digits
    and ``_`` becomes ``_``)."""
    return sc.arrow("""
        with hlo as (
            select distinct m.module, i.name::varchar as name, c.name::varchar as computation,
                   i.opcode::varchar as opcode, i.fusion_kind::varchar as fusion_kind
            from instructions i join @modmap m using (file_id)
            join computations c using (file_id, computation_id)
            where m.is_hlo)
        select *, regexp_replace(name, '[^A-Za-z0-9_]', '_', 'g') as kernel
        from hlo qualify count(*) over (partition by module, name) = 1""")


@derived("thunk_instructions")
def _thunk_instructions(sc: Scope) -> pa.Table:
    """Every thunk row with its instruction (printed, metadata, kernel name) and its HLO."""
    return sc.arrow("""
        with by_kernel as (
            -- a kernel name is a fallback only where one instruction sanitizes to it
            select module, kernel, any_value(name) as name
            from @thunk_hlo_names group by all having count(*) = 1),
        named as (
            select m.module, m.module_name, t.file_id, t.thunk_id, t.printed_id, t.parent_thunk_id,
                   t.kind::varchar as kind, t.kernel_name::varchar as kernel_name,
                   ltrim(t.instruction::varchar, '%') as printed, md.instruction as meta, k.name as by_kernel
            from thunks t join @modmap m using (file_id)
            left join @thunk_meta md on md.module = m.module and md.thunk_id = t.printed_id
            left join by_kernel k on k.module = m.module and k.kernel = t.kernel_name::varchar
            where t.kind is not null),
        chosen as (
            select *, coalesce(printed, meta, by_kernel) as instruction,
                   case when printed is not null then 'printed' when meta is not null then 'metadata'
                        when by_kernel is not null then 'kernel_name' end as instruction_from
            from named),
        hlo as (
            select c.*, h.computation, h.opcode, h.fusion_kind,
                   case when h.opcode = 'fusion' then c.instruction end as own_fusion
            from chosen c left join @thunk_hlo_names h on h.module = c.module and h.name = c.instruction)
        select h.module, h.module_name, h.file_id, h.thunk_id, h.printed_id, h.kind, h.kernel_name,
               h.instruction, h.instruction_from, h.computation, h.opcode, h.fusion_kind,
               -- the fusion it runs, else the one its parent thunk runs (one level)
               coalesce(h.own_fusion, p.own_fusion) as fusion
        from hlo h left join hlo p on p.file_id = h.file_id and p.thunk_id = h.parent_thunk_id
        order by h.module, h.file_id, h.thunk_id""")


@checked_analysis
def thunk_instructions(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """Every GPU thunk (``thunks`` rows with a kind) with the HLO instruction it runs, per module:
    ``module``, ``module_name``, ``file_id`` (the thunk-sequence file), ``thunk_id``,
    ``printed_id``, ``kind``, ``kernel_name``; ``instruction`` and ``instruction_from``
    (``printed`` on the thunk's line, ``metadata`` from ``*.thunk_metadata.txt`` by the thunk's
    id, ``kernel_name`` the one instruction whose sanitized name is the kernel's; null where
    none names it); ``computation``, ``opcode``, ``fusion_kind`` of that instruction in the
    module's after-optimizations HLO (null when it is not there); ``fusion``: the fusion the
    thunk runs, or the one its parent thunk runs. Join ``costs(dump)`` on (``module``,
    ``instruction``) for the instruction's FLOPs and bytes."""
    sc = scope_of(dump, module)
    return sc.arrow("select * from @thunk_instructions")
