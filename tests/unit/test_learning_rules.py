"""The rules of lessons that learn (pure): what a finished run records, a lesson's standing,
the misled gate and the retirement rule."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.memory.domain.learning import (
    FeedbackSeen,
    Judged,
    KnownLesson,
    LearningConfig,
    LessonRecord,
    Outcome,
    classify,
    misled_here,
    retirement_reason,
    standing,
)
from harness.memory.domain.ranking import RankingConfig, Scored, fuse

CONFIG = LearningConfig(restate_cosine=0.8, misled_cosine=0.5, fade_after_days=30)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))


def lesson(
    lid: uuid.UUID, vec: list[float], *, key: str | None = None, placed: bool = False
) -> KnownLesson:
    return KnownLesson(lid, key, f"fp-{lid.int}", vec, placed, in_lesson_scope=True)


def fb(text: str, vec: list[float], *, key: str | None = None, fp: str = "new") -> FeedbackSeen:
    return FeedbackSeen("v1", text, key, fp, vec)


def test_a_key_match_reinforces_even_when_the_wording_differs() -> None:
    got = classify(
        feedback=[fb("Completely different words here", [0.0, 1.0], key="lesson.k")],
        lessons=[lesson(A, [1.0, 0.0], key="lesson.k")],
        misled_ids=[],
        accepted=False,
        config=CONFIG,
    )
    assert [(a.outcome, a.lesson_id, a.polarity) for a in got] == [(Outcome.MISSED, A, "positive")]


def test_a_near_duplicate_reinforces_a_far_one_is_a_new_lesson() -> None:
    near = classify(
        feedback=[fb("restated rule", [0.9, 0.1])],
        lessons=[lesson(A, [1.0, 0.0], placed=True)],
        misled_ids=[],
        accepted=False,
        config=CONFIG,
    )
    assert [(a.outcome, a.lesson_id) for a in near] == [(Outcome.REPEATED, A)]
    far = classify(
        feedback=[fb("another rule", [0.0, 1.0])],
        lessons=[lesson(A, [1.0, 0.0], placed=True)],
        misled_ids=[],
        accepted=False,
        config=CONFIG,
    )
    assert [(a.outcome, a.new_lesson) for a in far] == [
        (Outcome.TAUGHT, True),
        (Outcome.RECALLED, False),
    ]


def test_the_same_wording_restates_without_vectors() -> None:
    got = classify(
        feedback=[fb("same", None, fp="fp-1")],  # type: ignore[arg-type]
        lessons=[lesson(A, None)],  # type: ignore[arg-type]
        misled_ids=[],
        accepted=True,
        config=CONFIG,
    )
    assert [(a.outcome, a.lesson_id) for a in got] == [(Outcome.MISSED, A)]


def test_misled_ids_and_does_not_apply_feedback_give_negative_contexts() -> None:
    got = classify(
        feedback=[fb("The table rule does not apply to a tweet.", [0.7, 0.7])],
        lessons=[lesson(A, [1.0, 0.0], placed=True), lesson(B, [0.6, 0.8], placed=True)],
        misled_ids=[A],
        accepted=False,
        config=CONFIG,
    )
    assert {(a.outcome, a.lesson_id, a.polarity) for a in got} == {
        (Outcome.MISLED, A, "negative"),
        (Outcome.MISLED, B, "negative"),
    }


def test_two_feedbacks_restating_one_new_rule_write_one_lesson() -> None:
    got = classify(
        feedback=[fb("rule x", [1.0, 0.0]), fb("rule x again", [0.95, 0.05])],
        lessons=[],
        misled_ids=[],
        accepted=False,
        config=CONFIG,
    )
    assert [a.new_lesson for a in got] == [True]


vectors = st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3).filter(
    lambda v: sum(x * x for x in v) > 1e-3
)


@given(
    lessons_=st.lists(st.tuples(vectors, st.booleans()), min_size=0, max_size=5),
    feedback=st.lists(vectors, min_size=0, max_size=4),
    accepted=st.booleans(),
    seed=st.randoms(use_true_random=False),
)
def test_every_placed_lesson_gets_one_outcome_whatever_the_order(
    lessons_: list[tuple[list[float], bool]],
    feedback: list[list[float]],
    accepted: bool,
    seed: object,
) -> None:
    known = [
        lesson(uuid.UUID(int=i + 1), vec, placed=placed) for i, (vec, placed) in enumerate(lessons_)
    ]
    fbs = [fb(f"feedback {i}", vec, fp=f"f{i}") for i, vec in enumerate(feedback)]
    got = classify(feedback=fbs, lessons=known, misled_ids=[], accepted=accepted, config=CONFIG)
    shuffled = list(known)
    seed.shuffle(shuffled)  # type: ignore[attr-defined]
    again = classify(
        feedback=fbs, lessons=shuffled, misled_ids=[], accepted=accepted, config=CONFIG
    )
    key = sorted((a.outcome.value, str(a.lesson_id), a.feedback_index or -1) for a in got)
    assert key == sorted((a.outcome.value, str(a.lesson_id), a.feedback_index or -1) for a in again)
    touched = [a.lesson_id for a in got if a.lesson_id is not None]
    assert len(touched) == len(set(touched))  # one outcome per lesson per run
    placed = {k.id for k in known if k.placed}
    assert placed <= set(touched)
    assert all(a.outcome is not Outcome.CLEAR or accepted for a in got)


counts = st.integers(0, 50)


@given(clear=counts, repeated=counts, misled=counts, more=st.integers(1, 5))
def test_standing_is_never_positive_and_falls_with_each_bad_outcome(
    clear: int, repeated: int, misled: int, more: int
) -> None:
    record = LessonRecord(clear=clear, repeated=repeated, misled=misled, last_seen=NOW)
    worse = LessonRecord(clear=clear, repeated=repeated, misled=misled + more, last_seen=NOW)
    assert standing(record, NOW, CONFIG) <= 0.0
    assert standing(worse, NOW, CONFIG) < standing(record, NOW, CONFIG)
    if repeated == misled == 0:
        assert standing(record, NOW, CONFIG) == 0.0


def test_a_lesson_nothing_happened_to_fades_and_is_proposed() -> None:
    fresh = LessonRecord(last_seen=NOW - timedelta(days=29))
    idle = LessonRecord(last_seen=NOW - timedelta(days=61))
    assert standing(fresh, NOW, CONFIG) == 0.0
    assert standing(idle, NOW, CONFIG) == pytest.approx(-2 * math.log(2))
    assert retirement_reason(fresh, NOW, CONFIG) is None
    assert "not placed or taught since" in (retirement_reason(idle, NOW, CONFIG) or "")
    bad = LessonRecord(clear=1, misled=3, last_seen=NOW)
    assert "keeps not helping" in (retirement_reason(bad, NOW, CONFIG) or "")


@given(
    neg=st.none() | st.floats(-1, 1),
    ctx=st.none() | st.floats(-1, 1),
    content=st.none() | st.floats(-1, 1),
)
def test_misled_here_when_a_misled_task_is_at_least_as_close(
    neg: float | None, ctx: float | None, content: float | None
) -> None:
    best = max((v for v in (ctx, content) if v is not None), default=-1.0)
    assert misled_here(neg, ctx, content) == (neg is not None and neg >= best)


def test_a_lesson_misled_here_never_passes_the_judge() -> None:
    cfg = RankingConfig(threshold=0.0)
    good = Scored(A, sim=0.9, vrank=1, content_sim=0.9, kind="lesson")
    misled = Scored(B, sim=0.9, vrank=2, content_sim=0.5, negative_sim=0.95, kind="lesson")
    kept, dropped = fuse([good, misled], cfg, lexical_only=False)
    assert [r.scored.id for r in kept] == [A]
    assert dropped[0].judgement.explain().startswith("p=0.000 (misled here")


def test_ties_break_by_content_not_by_id() -> None:
    cfg = RankingConfig(threshold=0.0)
    one = Scored(A, sim=0.5, vrank=1, content_sim=0.5, fingerprint="b")
    two = Scored(C, sim=0.5, vrank=1, content_sim=0.5, fingerprint="a")
    kept, _ = fuse([one, two], cfg, lexical_only=False)
    assert [r.scored.fingerprint for r in kept] == ["a", "b"]


def test_a_verdict_key_outside_the_key_rules_is_refused() -> None:
    for bad in (" x", "x\n", "", "k" * 151):
        with pytest.raises(InvalidInput) as caught:
            Judged(accepted=False, id="v", key=bad)
        assert caught.value.fields[0].startswith("key")
    assert Judged(accepted=False, id="v", key="ops.summary-length").key == "ops.summary-length"


def test_a_does_not_apply_feedback_naming_misled_lessons_teaches_no_new_lesson() -> None:
    named = FeedbackSeen("v1", "Headings do not apply to a tweet.", None, "f", [0.0, 1.0], True)
    got = classify(
        feedback=[named],
        lessons=[lesson(A, [1.0, 0.0], placed=True)],
        misled_ids=[A],
        accepted=False,
        config=CONFIG,
    )
    assert [(a.outcome, a.lesson_id) for a in got] == [(Outcome.MISLED, A)]


def test_a_verdict_naming_its_check_keys_its_lesson_and_repeats_teach_once() -> None:
    from harness.memory.domain.lessons import lessons_from_verdicts

    verdicts = [
        Judged(accepted=False, id="v1", feedback="Ops summaries are three lines at most.", key="k"),
        Judged(accepted=False, id="v2", feedback="Ops summaries are three lines at most. "),
        Judged(accepted=False, id="v3", feedback="error"),
        Judged(accepted=True, id="v4"),
    ]
    got = lessons_from_verdicts(
        verdicts, tenant="t", user_id="u", workflow_id=None, task_input="task", run_id="r"
    )
    assert [(i, c.key, c.source.verdict_id) for i, c in got] == [(0, "lesson.k", "v1")]


def test_a_lesson_passes_for_the_same_task_again_but_never_when_misled_here() -> None:
    cfg = RankingConfig(threshold=0.99)
    again = Scored(A, sim=0.8, vrank=1, content_sim=0.1, context_sim=0.8, kind="lesson")
    fact = Scored(B, sim=0.8, vrank=2, content_sim=0.1, context_sim=0.8, kind="fact")
    misled = Scored(
        C, sim=0.8, vrank=3, content_sim=0.1, context_sim=0.8, negative_sim=0.9, kind="lesson"
    )
    kept, _ = fuse([again, fact, misled], cfg, lexical_only=False)
    assert [r.scored.id for r in kept] == [A]


def test_a_trace_line_says_an_empty_signal_in_words() -> None:
    from harness.memory.domain.ranking import Ranked
    from harness.memory.domain.relevance import Judgement
    from harness.memory.store.ops.retrieval import _signals

    line = _signals(Ranked(Scored(A), 0.1, Judgement(0.04)))
    assert line.endswith("no vector no word match") and "=-" not in line
    full = _signals(Ranked(Scored(A, sim=0.108, idf_coverage=0.5), 0.1, Judgement(0.04)))
    assert full.endswith("sim=0.108 idf_coverage=0.50")
