"""A stateful hypothesis model of supersession, approval and forgetting on PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from harness.clock import FixedClock
from harness.errors import ConflictingState
from harness.memory import MemoryCandidate, Scope, Status
from tests.support.facades import KINDS, Facade, open_facade
from tests.support.hash_embedder import HashEmbedder
from tests.support.stores import T0

# Also run on the Citus cluster (make test-citus): the same tests, sharded by tenant.
pytestmark = pytest.mark.citus


KEYS = ["lang", "length", "tone"]
SCOPES = [(Scope.USER, "alice"), (Scope.PLATFORM, None)]


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(scope="module", params=KINDS)
def state_store(
    request: pytest.FixtureRequest, db_url: str, runner: asyncio.Runner
) -> Iterator[Facade]:
    """Either facade: the machine holds both twins to the same model."""
    facade = open_facade(request.param, db_url, HashEmbedder(), runner, FixedClock(T0))
    yield facade
    facade.close()


class SupersessionMachine(RuleBasedStateMachine):
    """Reference model: per (scope, key), the ordered list of versions and which is active."""

    written = Bundle("written")
    store: Facade

    @initialize()
    def fresh_tenant(self) -> None:
        self.tenant = f"sm-{uuid.uuid4().hex[:10]}"
        self.clock: FixedClock = self.store.clock  # type: ignore[assignment]
        self.active: dict[tuple[Scope, str], uuid.UUID] = {}
        self.pending: dict[uuid.UUID, tuple[Scope, str]] = {}
        self.gone: set[uuid.UUID] = set()

    @rule(
        target=written,
        key=st.sampled_from(KEYS),
        where=st.sampled_from(SCOPES),
        origin=st.sampled_from(["api", "completion"]),
        text=st.text("abc ", min_size=1, max_size=12),
    )
    def write(self, key: str, where: tuple[Scope, str | None], origin: str, text: str) -> uuid.UUID:
        self.clock.at += timedelta(seconds=1)
        scope, scope_id = where
        m = self.store.write(
            MemoryCandidate(
                tenant=self.tenant,
                scope=scope,
                scope_id=scope_id,
                kind="preference",
                key=key,
                content=f"{key}: {text}",
                source={"origin": origin},
            )
        )
        if scope is Scope.PLATFORM and origin == "completion":
            assert m.status is Status.PENDING_APPROVAL and m.supersedes is None
            self.pending[m.id] = (scope, key)
        else:
            assert m.status is Status.ACTIVE
            assert m.supersedes == self.active.get((scope, key))
            self.active[(scope, key)] = m.id
        return m.id

    @rule(memory_id=written)
    def approve(self, memory_id: uuid.UUID) -> None:
        if memory_id in self.pending:
            scope, key = self.pending.pop(memory_id)
            m = self.store.approve(memory_id, approver="admin", tenant=self.tenant)
            assert m.supersedes == self.active.get((scope, key))
            self.active[(scope, key)] = memory_id
        elif memory_id not in self.gone:
            with pytest.raises(ConflictingState):
                self.store.approve(memory_id, approver="admin", tenant=self.tenant)

    @rule(memory_id=written)
    def forget(self, memory_id: uuid.UUID) -> None:
        existed = memory_id not in self.gone
        assert self.store.forget(memory_id, tenant=self.tenant) is existed
        self.gone.add(memory_id)
        self.pending.pop(memory_id, None)
        for place, active_id in list(self.active.items()):
            if active_id == memory_id:
                del self.active[place]  # forgetting never resurrects the previous version

    @invariant()
    def one_active_per_key_and_linear_history(self) -> None:
        if not hasattr(self, "tenant"):
            return
        for scope, scope_id in SCOPES:
            for key in KEYS:
                hist = self.store.history(self.tenant, scope, scope_id, key)
                active = [h.id for h in hist if h.status is Status.ACTIVE]
                expected = self.active.get((scope, key))
                assert active == ([expected] if expected else [])
                ids = {h.id for h in hist}
                for h in hist:
                    assert h.supersedes is None or h.supersedes in ids
                    assert h.superseded_by is None or h.superseded_by in ids
                successors = [h.supersedes for h in hist if h.supersedes is not None]
                assert len(successors) == len(set(successors))  # nothing superseded twice


def test_supersession_state_machine(state_store: Facade) -> None:
    SupersessionMachine.store = state_store
    run_state_machine_as_test(
        SupersessionMachine,
        settings=settings(
            max_examples=15,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
