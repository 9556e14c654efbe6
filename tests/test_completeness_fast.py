"""The whole-file checks of ``completeness`` take a vectorised shortcut on plain buffer
assignments (``_allocations_plainly_fine``): it may only ever say "fine" where the exact check
(group-by and join) finds nothing. Random tables with duplicates, values past their
allocation, unlisted allocations, several files and rows out of order, both ways."""

import random

import pyarrow as pa
import pytest
from hlodump import completeness


def tables(rng: random.Random):
    alloc, asg = [], []
    line = 0
    for fid in range(rng.randint(1, 3)):
        n = rng.randint(0, 6)
        idx = list(range(n))
        if rng.random() < 0.2 and n:
            idx.append(rng.choice(idx))  # listed twice
        if rng.random() < 0.2:
            rng.shuffle(idx)
        gap = rng.choice([0, 0, 7])  # numbered 0, 1, 2 … as XLA does, or with gaps
        for a in idx:
            a = a * (gap + 1)
            line += 1
            size = rng.randint(0, 64)
            alloc.append((fid, a, size, line))
            for v in range(rng.randint(0, 3)):
                line += 1
                off = rng.randint(0, size)
                sz = rng.randint(0, size - off + (2 if rng.random() < 0.1 else 0))
                target = a if rng.random() > 0.05 else (n + 5) * (gap + 1) + 1  # a value of an unlisted allocation
                asg.append((fid, target, v, off, sz, line))
    a = pa.table({"file_id": pa.array([r[0] for r in alloc], pa.int32()), "allocation": pa.array([r[1] for r in alloc], pa.int64()),
                  "size": pa.array([r[2] for r in alloc], pa.int64()), "line": pa.array([r[3] for r in alloc], pa.int32())})
    s = pa.table({"file_id": pa.array([r[0] for r in asg], pa.int32()), "allocation": pa.array([r[1] for r in asg], pa.int64()),
                  "value_id": pa.array([r[2] for r in asg], pa.int64()), "offset": pa.array([r[3] for r in asg], pa.int64()),
                  "size": pa.array([r[4] for r in asg], pa.int64()), "line": pa.array([r[5] for r in asg], pa.int32())})
    return {"allocations": a, "assignments": s}


def test_the_shortcut_says_fine_only_where_the_exact_check_finds_nothing(monkeypatch):
    rng = random.Random(26)
    fine = found = 0
    for _ in range(600):
        t = tables(rng)
        shortcut = completeness._allocations_plainly_fine(t["allocations"], t["assignments"])
        with monkeypatch.context() as m:
            m.setattr(completeness, "_allocations_plainly_fine", lambda *_: False)
            exact = completeness._allocation_problems(t)
        assert completeness._allocation_problems(t) == exact  # the shortcut never changes the answer
        if shortcut:
            assert exact == [], exact
        fine += shortcut
        found += bool(exact)
    assert fine > 100 and found > 100, (fine, found)


@pytest.mark.parametrize("big", [1 << 62, (1 << 63) - 1])
def test_numbers_near_the_int64_limit_take_the_exact_path(big):
    t = {"allocations": pa.table({"file_id": pa.array([0], pa.int32()), "allocation": pa.array([0], pa.int64()),
                                  "size": pa.array([big], pa.int64()), "line": pa.array([1], pa.int32())}),
         "assignments": pa.table({"file_id": pa.array([0], pa.int32()), "allocation": pa.array([0], pa.int64()),
                                  "value_id": pa.array([1], pa.int64()), "offset": pa.array([big], pa.int64()),
                                  "size": pa.array([big], pa.int64()), "line": pa.array([2], pa.int32())})}
    assert not completeness._allocations_plainly_fine(t["allocations"], t["assignments"])
    [p] = completeness._allocation_problems(t)
    assert "lies past the end of allocation 0" in p[3]
