"""The two store facades are thin executors of one set of plans: they expose the same public
methods, with the same signatures and docstrings, one blocking and one a coroutine."""

from __future__ import annotations

import inspect

import pytest

from harness.memory import AsyncMemoryStore, MemoryStore
from harness.memory.store.aio import AsyncRunRecords
from harness.memory.store.base import StoreBase
from harness.memory.store.sync import RunRecords

#: Methods whose blocking and asyncio forms are written by each facade (construction and
#: closing), checked for equal parameters below like the others.
OWN = {"connect", "close"}


def _public(cls: type) -> dict[str, object]:
    """The public methods a class defines itself (not inherited from StoreBase)."""
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, classmethod))
    }


def test_both_facades_expose_the_same_public_methods() -> None:
    sync, aio = _public(MemoryStore), _public(AsyncMemoryStore)
    assert set(sync) == set(aio)
    assert len(sync) >= 30  # every store operation, named operations included
    assert not {"transaction", "maintenance", "engine"} & (set(sync) | set(dir(MemoryStore)))


@pytest.mark.parametrize(
    ("sync_cls", "async_cls"), [(MemoryStore, AsyncMemoryStore), (RunRecords, AsyncRunRecords)]
)
def test_each_method_has_one_signature_and_docstring_on_both(
    sync_cls: type, async_cls: type
) -> None:
    for name in _public(sync_cls):
        blocking, awaited = getattr(sync_cls, name), getattr(async_cls, name)
        assert inspect.signature(blocking).parameters.keys() == (
            inspect.signature(awaited).parameters.keys()
        ), name
        if name in OWN:
            continue
        assert inspect.signature(blocking) == inspect.signature(awaited), name
        assert blocking.__doc__ and blocking.__doc__ == awaited.__doc__, name
        assert not inspect.iscoroutinefunction(blocking), name
        assert inspect.iscoroutinefunction(awaited), name


def test_signatures_show_the_value_not_the_plan() -> None:
    sig = inspect.signature(MemoryStore.forget)
    assert next(iter(sig.parameters)) == "self"
    assert sig.return_annotation == "bool"
    assert inspect.signature(AsyncMemoryStore.recall).return_annotation == "RecallResult"


def test_state_without_io_is_shared_not_twinned() -> None:
    for name in ("read_routing", "check_candidate", "connections_in_use", "lexical_only"):
        assert name in vars(StoreBase)
        assert name not in vars(MemoryStore) and name not in vars(AsyncMemoryStore)
