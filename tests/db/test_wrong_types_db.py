"""Every public store method refuses a value of the wrong type with ``InvalidInput`` naming the
parameter, before any IO: no coercion (``b"alice"`` is not a tenant, ``True`` or ``"100"`` is
not a budget, ``0`` is not a date, ``"yes"`` is not a flag), no ``TypeError`` from deep inside,
no "database unreachable" for a bad argument, and nothing written.

One hypothesis test per method: it draws a parameter of the method and a wrong value for that
parameter's kind, calls the method with every other argument valid, and checks the answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.common import all_tenants
from harness.errors import InvalidInput
from harness.memory import MemoryStore
from product_adapter import ProductAdapter

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
NAN = float("nan")
NAIVE = datetime(2030, 1, 1)
LATER = datetime(2030, 1, 1, tzinfo=UTC)

# Wrong values per kind of parameter: what a careless caller or a JSON layer would pass.
WRONG: dict[str, list[Any]] = {
    "id": [b"alice", 1, True, 1.5, ["a"], None, object()],
    "optional id": [b"alice", 1, True, 1.5, ["a"], object()],
    "uuid": [1, b"x" * 16, True, 1.5, object(), "not-a-uuid", None],
    "int": [True, "100", 1.5, NAN, b"5", None, object()],
    "optional int": [True, "5", 1.5, NAN, b"5"],
    "optional count": [True, "5", 1.5, NAN, -1],
    "bool": ["yes", 1, None, b"1", 0.0],
    "float": ["0.3", True, NAN, object()],
    "aware datetime": [0, 1.5, True, "2030-01-01", NAIVE, b"x"],
    "optional aware datetime": [0, True, NAIVE, "2030-01-01"],
    "callable": [1, "f", object(), None],
    "optional callable": [1, "f", object()],
    "scope": [1, b"user", "nope", True, None],
    "text": [b"x", 1, True, object(), None],
    "optional text": [b"x", 1, True],
    "sha256": [None, 1, b"a" * 64, "abc", "Z" * 64],
    "mapping": [1, "x", b"x", True, None],
}


def rows(store: MemoryStore) -> int:
    with all_tenants(store) as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT (SELECT count(*) FROM memories) + (SELECT count(*) FROM runs)"
                    " + (SELECT count(*) FROM lesson_events)"
                )
            ).scalar_one()
        )


Params = dict[str, tuple[str, Any]]


def check(
    store: MemoryStore,
    data: st.DataObject,
    call: Callable[[dict[str, Any]], Any],
    params: Params,
    *,
    field_of: Callable[[str], str] = lambda name: name,
) -> None:
    name = data.draw(st.sampled_from(sorted(params)), label="parameter")
    kind, _ = params[name]
    wrong = data.draw(st.sampled_from(WRONG[kind]), label="wrong value")
    kwargs = {p: good for p, (_, good) in params.items()} | {name: wrong}
    before = rows(store)
    with pytest.raises(InvalidInput) as info:
        call(kwargs)
    field = field_of(name)
    assert any(f == field or f.endswith(f".{field}") for f in info.value.fields), (
        name,
        wrong,
        info.value.fields,
        str(info.value),
    )
    assert "\n" not in str(info.value)
    assert rows(store) == before


def candidate(tenant: str) -> Params:
    return {
        "tenant": ("id", tenant),
        "scope": ("scope", "user"),
        "scope_id": ("id", "alice"),
        "kind": ("scope", "fact"),
        "key": ("optional id", "printer"),
        "content": ("text", "the printer on floor 3 jams"),
        "context": ("optional text", None),
        "priority": ("int", 0),
        "expires_at": ("optional aware datetime", None),
    }


def request(tenant: str) -> Params:
    return {
        "tenant": ("id", tenant),
        "user_id": ("id", "alice"),
        "workflow_id": ("optional id", None),
        "session_id": ("optional id", None),
        "query": ("text", "printer"),
        "budget_chars": ("int", 2000),
        "max_items": ("int", 20),
        "max_item_chars": ("int", 500),
        "now": ("optional aware datetime", None),
        "strict": ("bool", False),
        "relevance_threshold": ("float", 0.3),
    }


@FUZZ
@given(data=st.data())
def test_write_refuses_wrong_types(store: MemoryStore, tenant: str, data: st.DataObject) -> None:
    check(store, data, store.write, candidate(tenant))


@FUZZ
@given(data=st.data())
def test_write_many_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    check(store, data, lambda kw: store.write_many([kw]), candidate(tenant))


@FUZZ
@given(data=st.data())
def test_recall_refuses_wrong_types(store: MemoryStore, tenant: str, data: st.DataObject) -> None:
    check(store, data, store.recall, request(tenant))


@FUZZ
@given(data=st.data())
def test_signals_refuses_wrong_types(store: MemoryStore, tenant: str, data: st.DataObject) -> None:
    params = request(tenant) | {"use_vector": ("bool", True)}

    def call(kw: dict[str, Any]) -> Any:
        use_vector = kw.pop("use_vector")
        return store.signals(kw, use_vector=use_vector)

    check(store, data, call, params)


def by_id(store_method: Callable[..., Any], tenant: str, **extra: tuple[str, Any]) -> Any:
    params: Params = {"memory_id": ("uuid", uuid.uuid4()), "tenant": ("id", tenant), **extra}

    def call(kw: dict[str, Any]) -> Any:
        memory_id, t = kw.pop("memory_id"), kw.pop("tenant")
        return store_method(memory_id, *kw.values(), tenant=t)

    return call, params


@pytest.mark.parametrize(
    "method",
    ["get", "forget", "audit_of", "lesson_events", "approve", "reject", "retire", "restore"],
)
@FUZZ
@given(data=st.data())
def test_methods_by_id_refuse_wrong_types(
    store: MemoryStore, tenant: str, method: str, data: st.DataObject
) -> None:
    extra: dict[str, tuple[str, Any]] = {}
    if method in ("approve", "reject", "retire", "restore"):
        extra["approver"] = ("id", "admin")
    if method == "reject":
        extra["reason"] = ("text", "not a policy")
    if method in ("retire", "restore"):
        extra["reason"] = ("optional text", "misleads")
    call, params = by_id(getattr(store, method), tenant, **extra)
    check(store, data, call, params)


@pytest.mark.parametrize("method", ["pending", "audit", "retirement_proposals"])
@FUZZ
@given(data=st.data())
def test_tenant_reads_refuse_wrong_types(
    store: MemoryStore, tenant: str, method: str, data: st.DataObject
) -> None:
    def call(kw: dict[str, Any]) -> Any:
        if method == "retirement_proposals":
            return store.retirement_proposals(tenant=kw["tenant"])
        return getattr(store, method)(kw["tenant"])

    check(store, data, call, {"tenant": ("id", tenant)})


@FUZZ
@given(data=st.data())
def test_history_refuses_wrong_types(store: MemoryStore, tenant: str, data: st.DataObject) -> None:
    params: Params = {
        "tenant": ("id", tenant),
        "scope": ("scope", "user"),
        "scope_id": ("id", "alice"),
        "key": ("id", "printer"),
    }
    check(store, data, lambda kw: store.history(**kw), params)


@FUZZ
@given(data=st.data())
def test_delete_scope_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {
        "tenant": ("id", tenant),
        "scope": ("scope", "user"),
        "scope_id": ("id", "nobody-here"),
    }
    check(store, data, lambda kw: store.delete_scope(**kw), params)


@FUZZ
@given(data=st.data())
def test_delete_workflow_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {"tenant": ("id", tenant), "workflow_id": ("id", "nobody-here")}
    check(store, data, lambda kw: store.delete_workflow(**kw), params)


@FUZZ
@given(data=st.data())
def test_purge_expired_refuses_wrong_types(store: MemoryStore, data: st.DataObject) -> None:
    # a naive datetime is refused here as on write
    check(
        store,
        data,
        lambda kw: store.purge_expired(**kw),
        {"now": ("optional aware datetime", LATER)},
    )


@FUZZ
@given(data=st.data())
def test_reembed_refuses_wrong_types(store: MemoryStore, data: st.DataObject) -> None:
    params: Params = {
        "batch_size": ("int", 256),
        "all_rows": ("bool", False),
        "progress": ("optional callable", None),
    }
    before = store.stored_model()
    check(store, data, lambda kw: store.reembed(**kw), params)
    assert store.stored_model() == before


@FUZZ
@given(data=st.data())
def test_idempotent_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {
        "tenant": ("id", tenant),
        "key": ("id", f"key-{uuid.uuid4().hex}"),
        "request_sha256": ("sha256", "a" * 64),
        "attempt": ("callable", lambda write_many: None),
    }
    check(
        store,
        data,
        lambda kw: store.idempotent(**kw),
        params,
        field_of=lambda name: "Idempotency-Key" if name == "key" else name,
    )


@FUZZ
@given(data=st.data())
def test_learn_refuses_wrong_types(store: MemoryStore, tenant: str, data: st.DataObject) -> None:
    params: Params = {
        "tenant": ("id", tenant),
        "user_id": ("id", "alice"),
        "run_id": ("id", "run-1"),
        "task": ("text", "write the report"),
    }
    check(store, data, store.learn, params)


@FUZZ
@given(data=st.data())
def test_runs_start_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {
        "run_id": ("id", f"run-{uuid.uuid4().hex}"),
        "tenant": ("id", tenant),
        "user_id": ("id", "alice"),
        "workflow_id": ("optional id", None),
        "session_id": ("optional id", None),
        "at": ("aware datetime", LATER),
    }
    check(store, data, lambda kw: store.runs.start(**kw), params)


@FUZZ
@given(data=st.data())
def test_runs_finish_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {
        "run_id": ("id", f"run-{uuid.uuid4().hex}"),
        "tenant": ("id", tenant),
        "status": ("text", "accepted"),
        "attempts": ("int", 1),
        "at": ("aware datetime", LATER),
        "error": ("optional text", None),
    }
    check(store, data, lambda kw: store.runs.finish(**kw), params)


@FUZZ
@given(data=st.data())
def test_runs_list_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {"tenant": ("id", tenant), "workflow_id": ("optional id", None)}
    check(store, data, lambda kw: store.runs.list(**kw), params)


@FUZZ
@given(data=st.data())
def test_browse_refuses_wrong_types(store: MemoryStore, tenant: str, data: st.DataObject) -> None:
    params: Params = {"tenant": ("id", tenant), "limit": ("int", 50)}
    check(store, data, lambda kw: store.browse(kw["tenant"], limit=kw["limit"]), params)


@FUZZ
@given(data=st.data())
def test_pending_reviews_refuses_wrong_types(
    store: MemoryStore, tenant: str, data: st.DataObject
) -> None:
    params: Params = {
        "tenant": ("id", tenant),
        "limit": ("int", 50),
        "similar_limit": ("int", 3),
    }
    check(
        store,
        data,
        lambda kw: store.pending_reviews(
            kw["tenant"], limit=kw["limit"], similar_limit=kw["similar_limit"]
        ),
        params,
    )


@FUZZ
@given(data=st.data())
def test_count_open_cleanups_refuses_wrong_types(store: MemoryStore, data: st.DataObject) -> None:
    check(store, data, lambda kw: store.count_open_cleanups(**kw), {"tenant": ("optional id", "t")})


@FUZZ
@given(data=st.data())
def test_cluster_refuses_wrong_types(store: MemoryStore, data: st.DataObject) -> None:
    params: Params = {"lock_wait_s": ("float", 3.0), "index_memory_mb": ("optional count", None)}
    check(store, data, lambda kw: store.cluster(**kw), params)


@FUZZ
@given(data=st.data())
def test_adapter_reconcile_and_pending_cleanups_refuse_wrong_types(
    store: MemoryStore, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    adapter = ProductAdapter(store, spool_path=tmp_path_factory.mktemp("spool") / "spool.jsonl")
    if data.draw(st.booleans(), label="reconcile"):
        check(store, data, lambda kw: adapter.reconcile(**kw), {"limit": ("optional count", 5)})
    else:
        check(
            store,
            data,
            lambda kw: adapter.pending_cleanups(**kw),
            {"tenant": ("optional id", "t")},
        )


def test_a_huge_content_is_refused_by_its_length_before_it_is_walked(
    store: MemoryStore, tenant: str
) -> None:
    huge = "ä\u200b" * 25_000_000  # 50 M characters a per-character walk would take seconds on
    started = datetime.now(UTC)
    with pytest.raises(InvalidInput) as info:
        store.write(
            {"tenant": tenant, "scope": "user", "scope_id": "a", "kind": "fact", "content": huge}
        )
    assert info.value.fields == ("content",) and "exceeds the maximum" in str(info.value)
    assert datetime.now(UTC) - started < timedelta(seconds=0.5)
