"""The task-stream benchmark in small (``bench.stream``): the real Engine and store, the
literal model and the stream judge, every policy on the same short stream."""

from __future__ import annotations

import pytest

from bench.common import CachedEmbedder
from bench.stream import load_stream, run_split
from harness.memory.domain.learning import LearningConfig


@pytest.fixture
def bench_server(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The benchmark's fresh databases on the test server, not a second embedded one.
    monkeypatch.setenv("HARNESS_BENCH_DATABASE_URL", server_url)


@pytest.mark.usefixtures("bench_server", "real_embedder")
@pytest.mark.parametrize("keyed", [False, True])
def test_memory_lowers_rejections_without_flooding_clean_tasks(keyed: bool) -> None:
    got = run_split(
        "dev", CachedEmbedder.load(), smoke=True, keyed=keyed, learning=LearningConfig()
    )
    none, naive, ours = got["no memory"], got["naive top-8"], got["harness"]
    assert got["stream"]["runs"] == len(load_stream("dev", smoke=True).tasks) == ours["runs"]
    assert none["reach_taught_once"] == 0.0 and none["clean_given_a_lesson"] == 0.0
    assert ours["first_attempt_rejections"] < none["first_attempt_rejections"]
    assert ours["clean_given_a_lesson"] < naive["clean_given_a_lesson"]
    assert ours["harm_runs"] <= naive["harm_runs"]
    if keyed:
        # A judge that names its check: one rule, one lesson.
        assert ours["lessons_per_taught_rule"] == 1.0
        assert ours["rules_with_more_than_one_lesson"] == 0


def test_the_stream_is_deterministic_and_conflicts_follow_their_rule() -> None:
    one, two = load_stream("dev"), load_stream("dev")
    assert [t.text for t in one.tasks] == [t.text for t in two.tasks]
    for t in one.tasks:
        if t.kind == "conflict":
            before = [u for u in one.tasks[: t.index] if u.rule == t.forbidden]
            assert len(before) >= 2
    test = load_stream("test")
    assert not {t.text for t in test.tasks} & {t.text for t in one.tasks}
