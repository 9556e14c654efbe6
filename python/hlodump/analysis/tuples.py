"""The get-tuple-elements that compact tuple operands stand for (XLA 2026, jax >= 0.11).

Dumps print HLO with compact tuple operands: a non-ROOT ``get-tuple-element`` is not printed, its
users name the tuple and the element (``copy(%arg_tuple.1#0)``; ``instructions.operand_index``).
The other files of the same compile keep the compiler's own names for those instructions: the
schedule and live ranges say ``get-tuple-element.14`` or ``while.8``, which the HLO text no longer
has. The values file (``*-buffer-assignment-values.txt``, or the ``Used values`` section) prints
each value's defining instruction without compaction (``%copy.4 = s32[] copy(%get-tuple-element.14)``,
``values.defining_instruction``): the same instruction, operand by operand, so the k-th operand
there is the element the k-th compact operand of the HLO text stands for.

``tuple_elements`` pairs them for every module at once (one query): each name the compiler gave
such a get-tuple-element, with the tuple and the element path it stands for. Names never used by
an instruction that defines a value (a get-tuple-element whose only users define none) are not
found this way: those rows are missing, not guessed.
"""

from __future__ import annotations

from .._typing import checked_analysis

from typing import TYPE_CHECKING

import pyarrow as pa

from .engine import Scope, derived
from .modules import ModuleSel, scope_of

if TYPE_CHECKING:  # pragma: no cover
    from ..dump import Dump

__all__ = ["tuple_elements"]

# `%name = SHAPE opcode(OPERANDS)…` as the values file prints it (no compaction, no operand
# shapes): the opcode is the first ` word(` after ` = ` (a shape has no space before a word and
# a '('), the operands the text up to the next ')' (plain `%name, %name`).
_OPERANDS = r"^%?[^ ]+ = .*? [a-z][a-z0-9\-]*\(([^()]*)\)"


@derived("tuple_elements")
def _tuple_elements(sc: Scope) -> pa.Table:
    """(module, name, tuple, path): the compiler's name of each get-tuple-element a compact
    operand stands for."""
    return sc.arrow(f"""
        with hlo as (
            select m.module, i.name as user_name, unnest(i.operands) as tuple,
                   unnest(i.operand_index) as path, generate_subscripts(i.operands, 1) as k
            from instructions i join @modmap m using (file_id)
            join files f using (file_id)
            -- the text the buffer assignment is of: after optimizations, not a pass dump
            where f.stage = 'after_optimizations' and f.pass_index is null
              and len(flatten(i.operand_index)) > 0),
        compact as (select * from hlo where len(path) > 0),
        vals as (
            select distinct m.module, v.instruction::varchar as user_name,
                   string_split(regexp_replace(regexp_extract(v.defining_instruction::varchar, '{_OPERANDS}', 1),
                                               '/\\*[^*]*\\*/', '', 'g'), ', ') as ops
            from "values" v join @modmap m using (file_id)
            where v.defining_instruction::varchar not like '%#%'),
        printed as (
            select module, user_name, ltrim(trim(unnest(ops)), '%') as name, generate_subscripts(ops, 1) as k
            from vals where ops <> [''])
        select distinct c.module, p.name, c.tuple::varchar as tuple, c.path
        from compact c join printed p using (module, user_name, k)
        where p.name <> c.tuple::varchar
        order by 1, 2""")


@checked_analysis
def tuple_elements(dump: "Dump", module: ModuleSel = None) -> pa.Table:
    """The compiler's name of every get-tuple-element a compact tuple operand stands for, per
    module: ``module``, ``name`` (``get-tuple-element.14``, ``while.8``: as the schedule, live
    ranges and values name it), ``tuple`` (the instruction printed in the HLO text) and ``path``
    (``list<int32>``, the element: ``%arg_tuple.1#0`` → ``arg_tuple.1``, ``[0]``). Empty for
    dumps without compact operands (jax < 0.11) or without a values file."""
    sc = scope_of(dump, module)
    return sc.arrow("select * from @tuple_elements")
