"""The soak's cross-caller check, without running a soak."""

from __future__ import annotations

from bench.soak import cross_items
from harness.memory import Caller


def test_cross_items_counts_only_other_callers_tags() -> None:
    alice = Caller("t1", "alice")
    mine = "- [user fact] kestrel [owner t1/alice]\n- [platform fact] rota [owner t1/*]"
    assert cross_items(mine, alice) == 0
    assert cross_items(mine + "\n- osprey [owner t1/bob]", alice) == 1
    assert cross_items("- x [owner t2/alice]\n- y [owner t2/*]", alice) == 2
    assert cross_items("no tags at all", alice) == 0
