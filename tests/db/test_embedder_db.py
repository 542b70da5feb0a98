"""Embedder loading, lexical-only mode, model bookkeeping and reembed.

Here the tests that need PostgreSQL or the real model, in-process; the others are in
tests/unit/test_embedder.py."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.common import all_tenants
from harness.errors import EmbeddingModelMismatch, InvalidInput
from harness.memory import MemoryCandidate, MemoryStore, RecallRequest
from harness.memory.embedding.embedder import Embedder
from harness.settings import Settings
from tests.support.hash_embedder import HashEmbedder


def fact(tenant: str, content: str) -> MemoryCandidate:
    return MemoryCandidate(tenant=tenant, scope="user", scope_id="u", kind="fact", content=content)


def test_real_model_loads_from_folder(real_embedder: Embedder) -> None:
    assert real_embedder.dim == 384
    a, b, c = real_embedder.embed(
        [
            "The cat sits on the mat",
            "A cat is sitting on a rug",
            "Quarterly revenue grew by 4 percent",
        ]
    )
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-3)
    sim = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert sim(a, b) > sim(a, c) + 0.3


def test_lexical_only_store_warns_once_and_still_recalls(
    fresh_db_url: str, tenant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no model anywhere: the variable unset, no hub, an empty fastembed cache
    monkeypatch.delenv("HARNESS_EMBED_MODEL_PATH", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-fastembed-cache"))
    settings = Settings.from_env()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = MemoryStore.connect(fresh_db_url, settings=settings)
    try:
        lexical = [w for w in caught if "lexical-only" in str(w.message)]
        assert len(lexical) == 1
        assert "HARNESS_EMBED_MODEL_PATH" in str(lexical[0].message)
        st = store.status()
        assert st.embedder_mode == "lexical-only" and st.embed_model is None
        m = store.write(fact(tenant, "The staging cluster is named kestrel"))
        assert not m.has_embedding
        r = store.recall(RecallRequest(tenant=tenant, user_id="u", query="staging cluster name"))
        assert [i.memory.id for i in r.items] == [m.id]
        assert store.status().missing_embeddings == 1
    finally:
        store.close()


@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_an_explicit_model_folder_that_is_wrong_is_an_error_naming_it(
    fresh_db_url: str, tmp_path: Path, folder: str
) -> None:
    """An explicit HARNESS_EMBED_MODEL_PATH is final: no silent lexical-only fallback."""
    path = tmp_path / folder
    if folder == "empty":
        path.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InvalidInput) as info:
            MemoryStore.connect(fresh_db_url, settings=Settings.from_env(embed_model_path=path))
    message = str(info.value)
    assert info.value.fields == ("HARNESS_EMBED_MODEL_PATH",)
    assert message.startswith("HARNESS_EMBED_MODEL_PATH") and str(path) in message
    assert "unset it to run lexical-only" in message and "\n" not in message
    assert not [w for w in caught if "lexical-only" in str(w.message)]  # an error, not a warning


def test_model_mismatch_refuses_and_reembed_fixes(fresh_db_url: str, tenant: str) -> None:
    first = MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(name="model-a"))
    first.write_many([fact(tenant, f"fact number {i}") for i in range(5)])
    assert first.stored_model() == ("model-a", 384)
    first.close()

    with pytest.raises(EmbeddingModelMismatch, match="harness-memory reembed") as info:
        MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(name="model-b", dim=64))
    assert info.value.stored == "model-a" and info.value.configured_dim == 64

    fixer = MemoryStore.connect(
        fresh_db_url, embedder=HashEmbedder(name="model-b", dim=64), check_model=False
    )
    seen: list[tuple[int, int]] = []
    assert fixer.reembed(batch_size=2, progress=lambda d, t: seen.append((d, t))) == 5
    assert seen[-1] == (5, 5) and len(seen) == 3
    fixer.close()

    again = MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(name="model-b", dim=64))
    try:
        assert again.stored_model() == ("model-b", 64)
        r = again.recall(RecallRequest(tenant=tenant, user_id="u", query="fact number 3"))
        assert any(i.memory.content == "fact number 3" for i in r.items)
        assert again.status().missing_embeddings == 0
    finally:
        again.close()


def test_embedding_failure_still_writes(store: MemoryStore, tenant: str) -> None:
    class Broken(HashEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            raise RuntimeError("onnx exploded")

    store.embedder = Broken()
    m = store.write(fact(tenant, "written without a vector"))
    assert store.get(m.id, tenant=tenant) is not None and not m.has_embedding


def test_reembed_rebuilds_a_lessons_context_vector(fresh_db_url: str, tenant: str) -> None:
    """A lesson is found through the task that taught it: reembed must rebuild that vector too,
    with the new model, not leave it NULL or from the old one."""
    from harness.memory.domain.lessons import lesson_candidate

    first = MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(name="model-a"))
    lesson = first.write(
        lesson_candidate(
            tenant=tenant,
            user_id="u",
            workflow_id=None,
            feedback="Summaries for the ops channel must be three lines at most",
            task_input="Summarise the incident report for the ops channel",
            run_id="r1",
            verdict_id="v1",
        )
    )
    first.close()
    new_model = HashEmbedder(name="model-b", dim=64)
    fixer = MemoryStore.connect(fresh_db_url, embedder=new_model, check_model=False)
    try:
        assert fixer.reembed(batch_size=10) == 1
        with all_tenants(fixer) as conn:
            content_vec, context_vec = conn.execute(
                sa.text(
                    "SELECT embedding::text, context_embedding::text FROM memories WHERE id = :i"
                ),
                {"i": lesson.id},
            ).one()
        assert context_vec is not None
        expected = new_model.embed(["Summarise the incident report for the ops channel"])[0]
        got = [float(x) for x in context_vec.strip("[]").split(",")]
        assert len(got) == 64
        assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) < 1e-5
        assert content_vec != context_vec
    finally:
        fixer.close()


def test_a_batch_gives_each_text_its_own_vector_in_order(real_embedder: Embedder) -> None:
    """Texts of very different lengths embedded together (batched shortest first inside the
    embedder) get the same vectors, in the caller's order, as when embedded one at a time."""
    texts = [
        "a much longer sentence about the deployment window of the billing service in March "
        "and the rollback plan agreed with the on-call team",
        "short",
        "the cat sits on the mat",
        "x" * 3 + " medium length text about kestrel",
    ] * 20
    together = real_embedder.embed(texts)
    alone = {t: real_embedder.embed([t])[0] for t in set(texts)}
    assert len(together) == len(texts)
    for text, vector in zip(texts, together, strict=True):
        assert max(abs(a - b) for a, b in zip(vector, alone[text], strict=True)) < 1e-4


def test_embed_threads_reach_the_model_and_keep_its_vectors(
    real_embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HARNESS_EMBED_THREADS`` sets onnxruntime's threads per call; the vectors stay the
    model's (one thread or one per core give the same numbers)."""
    from harness.memory.embedding.embedder import FastEmbedder
    from harness.memory.embedding.model_choice import choose_model

    monkeypatch.setenv("HARNESS_EMBED_THREADS", "1")
    settings = Settings.from_env(home=tmp_path)
    assert settings.embed_threads == 1
    choice = choose_model(settings, embedded=False)
    assert isinstance(choice.embedder, FastEmbedder) and choice.embedder.threads == 1
    texts = ["short", "a much longer sentence about the billing service's deployment window"]
    for one, default in zip(choice.embedder.embed(texts), real_embedder.embed(texts), strict=True):
        assert max(abs(a - b) for a, b in zip(one, default, strict=True)) < 1e-5


def test_reembed_rebuilds_the_vectors_of_a_lessons_later_contexts_and_wordings(
    fresh_db_url: str, tenant: str
) -> None:
    """A lesson taught again (its task a new context, its feedback a new wording) keeps those
    vectors in its events: reembed rebuilds them with the new model (same dimension here, so
    nothing clears them first)."""
    from harness.memory.domain.lessons import lesson_content

    def report(run: str, feedback: str, task: str) -> dict[str, object]:
        return {
            "tenant": tenant,
            "user_id": "u",
            "run_id": run,
            "task": task,
            "verdicts": [{"id": f"v-{run}", "accepted": False, "feedback": feedback, "key": "k"}],
        }

    first = MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(name="model-a"))
    first.learn(report("r1", "Ops summaries are three lines at most.", "Summarise the outage"))
    first.learn(report("r2", "Keep ops recaps to three lines.", "Recap the deploy failure"))
    first.close()
    new_model = HashEmbedder(name="model-b")
    fixer = MemoryStore.connect(fresh_db_url, embedder=new_model, check_model=False)
    try:
        fixer.reembed(batch_size=1)
        with all_tenants(fixer) as conn:
            task_vec, wording_vec = conn.execute(
                sa.text(
                    "SELECT embedding::text, feedback_embedding::text FROM lesson_events "
                    "WHERE event = 'missed'"
                )
            ).one()
        for text, stored in (
            ("Recap the deploy failure", task_vec),
            (lesson_content("Keep ops recaps to three lines."), wording_vec),
        ):
            expected = new_model.embed([text])[0]
            got = [float(x) for x in stored.strip("[]").split(",")]
            assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) < 1e-5
    finally:
        fixer.close()


class Rotated(HashEmbedder):
    """Another model of the same dimension: its vectors differ from HashEmbedder's."""

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return [v[1:] + v[:1] for v in super().embed(texts)]


def stored_vectors(store: MemoryStore, tenant: str) -> dict[str, list[float] | None]:
    with all_tenants(store) as conn:
        rows = conn.execute(
            sa.text("SELECT content, embedding::text AS v FROM memories WHERE tenant = :t"),
            {"t": tenant},
        ).all()
    return {r.content: None if r.v is None else json.loads(r.v) for r in rows}


@pytest.mark.parametrize("batch_size", [-1, 0, float("nan"), True, "5", 1.5])
def test_reembed_refuses_a_bad_batch_size_before_recording_the_model(
    fresh_db_url: str, tenant: str, batch_size: object
) -> None:
    first = MemoryStore.connect(fresh_db_url, embedder=HashEmbedder(name="model-a"))
    first.write(fact(tenant, "the printer jams"))
    first.close()
    fixer = MemoryStore.connect(fresh_db_url, embedder=Rotated(name="model-b"), check_model=False)
    try:
        with pytest.raises(InvalidInput) as info:
            fixer.reembed(batch_size=batch_size)  # type: ignore[arg-type]
        assert info.value.fields == ("batch_size",)
        assert fixer.stored_model() == ("model-a", 384)
        assert all(v is not None for v in stored_vectors(fixer, tenant).values())
    finally:
        fixer.close()


def test_a_reembed_stopped_midway_leaves_no_old_vector_and_missing_only_finishes_it(
    fresh_db_url: str, tenant: str
) -> None:
    old = HashEmbedder(name="model-a")
    first = MemoryStore.connect(fresh_db_url, embedder=old)
    colours = ["crimson", "teal", "ochre", "violet", "amber", "indigo", "saffron"]
    contents = [f"the {c} printer jams on thick paper" for c in colours]
    first.write_many([fact(tenant, c) for c in contents])
    first.close()

    new = Rotated(name="model-b")
    fixer = MemoryStore.connect(fresh_db_url, embedder=new, check_model=False)

    def killed(done: int, total: int) -> None:
        raise KeyboardInterrupt  # the operator's ^C after the first batch

    try:
        with pytest.raises(KeyboardInterrupt):
            fixer.reembed(batch_size=2, progress=killed)
        assert fixer.stored_model() == ("model-b", 384)
        vectors = stored_vectors(fixer, tenant)
        done = {c: v for c, v in vectors.items() if v is not None}
        assert len(done) == 2  # one batch, and no vector of the old model left anywhere
        for content, vec in done.items():
            assert vec == pytest.approx(new.embed([content])[0], abs=1e-6)
        assert fixer.status().missing_embeddings == 5
        # recall meanwhile works, and no old vector is scored against a new query vector
        r = fixer.recall(RecallRequest(tenant=tenant, user_id="u", query="crimson printer"))
        assert not r.degraded

        assert fixer.reembed(all_rows=False) == 5
        vectors = stored_vectors(fixer, tenant)
        for content, vec in vectors.items():
            assert vec == pytest.approx(new.embed([content])[0], abs=1e-6)
    finally:
        fixer.close()
