"""Recall of lessons that learn, with the real model: a lesson's own scale lets a task that
needs it through while unrelated tasks stay clean, a misled context keeps it out of a narrow
scope, and the same data gives the same answer in two tenants."""

from __future__ import annotations

import uuid
from typing import Any

from harness.memory import MemoryStore, RecallRequest

RULE = "Prices were left in dollars; give every amount in euros with two decimals."
UNRELATED = [
    "Write a haiku about the first snow of winter.",
    "Why do cats knead blankets with their paws?",
    "Suggest three board games for a family evening.",
    "Explain how tides work in two sentences.",
    "Recommend a novel set in Lisbon.",
    "What should I pack for a weekend hike?",
    "Give me a pun about penguins.",
]


def learn(store: MemoryStore, tenant: str, task: str, *verdicts: dict[str, Any], **kw: Any) -> Any:
    return store.learn(
        {
            "tenant": tenant,
            "user_id": "ana",
            "run_id": f"run-{uuid.uuid4().hex[:8]}",
            "task": task,
            "verdicts": [{"id": f"v{i}", **v} for i, v in enumerate(verdicts)],
            **kw,
        }
    )


def lesson_ids(store: MemoryStore, tenant: str, query: str, **kw: Any) -> list[uuid.UUID]:
    result = store.recall(RecallRequest(tenant=tenant, user_id="ana", query=query, **kw))
    return [i.memory.id for i in result.items if i.memory.kind.value == "lesson"]


def test_a_lesson_stands_out_for_a_task_that_needs_it_not_for_unrelated_ones(
    semantic_store: MemoryStore, tenant: str
) -> None:
    (lesson,) = learn(
        semantic_store,
        tenant,
        "Plan the budget for a three-day team trip to Lisbon.",
        {"accepted": False, "feedback": RULE},
        {"accepted": True},
    ).written
    needs = "Work out what we owe each freelancer now that this month's invoices are in."
    for task in UNRELATED:
        learn(semantic_store, tenant, task, {"accepted": True})
    assert lesson.id in lesson_ids(semantic_store, tenant, needs)
    assert lesson_ids(semantic_store, tenant, "Write a limerick about a lazy dog.") == []
    text = semantic_store.recall(RecallRequest(tenant=tenant, user_id="ana", query=needs)).explain()
    assert "stands_out=" in text


def test_a_workflow_lesson_that_misled_a_task_like_this_is_left_out(
    semantic_store: MemoryStore, tenant: str
) -> None:
    wf = {"workflow_id": "wf-release-notes"}
    (lesson,) = learn(
        semantic_store,
        tenant,
        "Write the release notes for version 3.7.",
        {"accepted": False, "feedback": "Group the changes under Added, Changed and Fixed."},
        **wf,
    ).written
    tweet = "Write a one-sentence tweet announcing that version 3.8 is out."
    req = {"workflow_id": "wf-release-notes"}
    assert lesson_ids(semantic_store, tenant, tweet, **req) == [lesson.id]  # narrow: always in
    learn(
        semantic_store,
        tenant,
        tweet,
        {"accepted": False, "feedback": "Headings do not apply to a tweet.", "misled": [lesson.id]},
        {"accepted": True},
        placed=[lesson.id],
        **wf,
    )
    assert lesson_ids(semantic_store, tenant, "Tweet that version 3.9 is out.", **req) == []
    notes = "Write the release notes for version 4.0."
    assert lesson_ids(semantic_store, tenant, notes, **req) == [lesson.id]


def test_the_same_data_gives_the_same_answer_in_two_tenants(
    semantic_store: MemoryStore, tenant: str, other_tenant: str
) -> None:
    feedbacks = [
        RULE,
        "Dates like 'last Tuesday' are ambiguous: write every date as YYYY-MM-DD.",
        "Cite the source file path for every claim about the code.",
        "Never use the word leverage in anything you write for me.",
    ]
    answers = []
    for t in (tenant, other_tenant):
        for fb in feedbacks:
            learn(
                semantic_store,
                t,
                "Draft this week's status update.",
                {"accepted": False, "feedback": fb},
            )
        result = semantic_store.recall(
            RecallRequest(
                tenant=t,
                user_id="ana",
                query="Write the status update for Friday",
                relevance_threshold=0.0,
            )
        )
        answers.append([(i.memory.content, round(i.relevance, 9)) for i in result.items])
    assert answers[0] == answers[1] and answers[0]
