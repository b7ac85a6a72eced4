"""The ranking aids adapt to the memories they meet: short turns of sessions get the
neighbour window and session score, long memories do not; named authors and dates lift."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capsule.search.query import named_authors, named_dates

DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
FILLER = [
    "How was your weekend?",
    "Pretty quiet, mostly reading.",
    "Any good books?",
    "A novel about sailing.",
    "Sounds lovely.",
    "It was, thanks for asking.",
]


def store_session(service, project, turns, *, session, start, pad=""):
    ids = []
    for offset, (author, text) in enumerate(turns):
        ids.append(
            service.store_memory(
                "t",
                {
                    "project": project,
                    "content": f"{author}: {text}{pad}",
                    "occurred_at": start + timedelta(seconds=offset),
                    "meta": {"author": author, "session": session},
                },
            ).memory.id
        )
    return ids


def chat(answer_turn="Running every morning, it clears my head."):
    turns = [("Caroline" if i % 2 else "Melanie", t) for i, t in enumerate(FILLER)]
    turns += [("Caroline", "What do you do to destress these days?"), ("Melanie", answer_turn)]
    turns += [("Caroline" if i % 2 else "Melanie", t + " Again.") for i, t in enumerate(FILLER)]
    return turns


def bm25_of(service, project, memory_id, query, **options):
    result = service.search("t", {"project": project, "query": query, "k": 20, "mode": "bm25"})
    return {h.id: h for h in result.results}.get(memory_id)


def test_short_turns_of_a_session_share_keyword_credit(make_service):
    service = make_service()
    ids = store_session(service, "p", chat(), session="s1", start=DAY)
    answer = ids[len(FILLER) + 1]  # holds none of the query's words
    hit = bm25_of(service, "p", answer, "destress")
    assert hit is not None and hit.components.bm25 > 0
    shape = service.indexes.get("t", "p", service.embedder.model_id).shape()
    assert shape.median_session == len(ids) and shape.median_length <= 40


def test_window_can_be_turned_off(make_service):
    from dataclasses import replace

    service = make_service()
    service._options = replace(service._options, window="off")
    ids = store_session(service, "p", chat(), session="s1", start=DAY)
    assert bm25_of(service, "p", ids[len(FILLER) + 1], "destress") is None


def test_long_memories_get_no_window(make_service):
    service = make_service()
    pad = " " + " ".join(f"detail{i}" for i in range(60))  # long memories, as in assistant answers
    ids = store_session(service, "p", chat(), session="s1", start=DAY, pad=pad)
    assert bm25_of(service, "p", ids[len(FILLER) + 1], "destress") is None
    shape = service.indexes.get("t", "p", service.embedder.model_id).shape()
    assert shape.median_length > 40


def test_memories_without_sessions_get_no_window(service):
    for offset, text in enumerate(FILLER + ["What do you do to destress?", "Running every morning."]):
        service.store_memory("t", {"project": "p", "content": text, "occurred_at": DAY + timedelta(seconds=offset)})
    result = service.search("t", {"project": "p", "query": "destress", "mode": "bm25"})
    assert [h.content for h in result.results] == ["What do you do to destress?"]


def test_a_named_author_lifts_their_memories(service):
    mel = service.store_memory(
        "t", {"project": "p", "content": "I painted a sunrise last week", "meta": {"author": "Melanie"}}
    ).memory.id
    car = service.store_memory(
        "t", {"project": "p", "content": "I painted a sunrise last week!", "meta": {"author": "Caroline"}}
    ).memory.id
    for name, wanted, other in (("Melanie", mel, car), ("Caroline", car, mel)):
        result = service.search("t", {"project": "p", "query": f"When did {name} paint a sunrise?"})
        hits = {h.id: h for h in result.results}
        assert result.results[0].id == wanted
        assert hits[wanted].components.boost == pytest.approx(0.2)
        assert hits[other].components.boost == 0.0


def test_of_two_named_authors_the_one_spoken_to_is_not_lifted(service):
    mel = service.store_memory(
        "t", {"project": "p", "content": "I painted a sunrise last week", "meta": {"author": "Melanie"}}
    ).memory.id
    car = service.store_memory(
        "t", {"project": "p", "content": "I painted a sunrise last week!", "meta": {"author": "Caroline"}}
    ).memory.id
    for query, wanted, other in (
        ("What did Melanie tell Caroline's sister about the sunrise?", mel, car),
        ("What did Caroline say to Melanie about the sunrise?", car, mel),
    ):
        hits = {h.id: h for h in service.search("t", {"project": "p", "query": query}).results}
        assert hits[wanted].components.boost == pytest.approx(0.2)
        assert hits[other].components.boost == 0.0
    both = service.search("t", {"project": "p", "query": "Have Melanie and Caroline both painted a sunrise?"})
    assert [h.components.boost for h in both.results] == [0.0, 0.0]  # naming everyone singles out no one


def test_a_named_date_lifts_what_happened_then(service):
    early = service.store_memory(
        "t",
        {"project": "p", "content": "Went to the support group", "occurred_at": datetime(2023, 5, 7, 18, tzinfo=UTC)},
    ).memory.id
    late = service.store_memory(
        "t",
        {
            "project": "p",
            "content": "Went to the support group again",
            "occurred_at": datetime(2023, 6, 20, 18, tzinfo=UTC),
        },
    ).memory.id
    result = service.search("t", {"project": "p", "query": "support group on 20 June, 2023"})
    hits = {h.id: h for h in result.results}
    assert result.results[0].id == late
    assert (hits[late].components.boost, hits[early].components.boost) == (pytest.approx(0.1), 0.0)


def test_query_analysis():
    assert [(s.start.day, s.end.day) for s in named_dates("What happened on 7 May 2023?")] == [(7, 8)]
    assert [(s.start.month, s.end.month) for s in named_dates("in May 2023")] == [(5, 6)]
    assert [s.start.year for s in named_dates("plans for 2024")] == [2024]
    assert named_dates("nothing dated here") == []
    people = {"Caroline": 0, "Melanie": 1, "Jon": 2}
    assert named_authors("Did Caroline call?", people) == [0]
    assert named_authors("What is Caroline's dog called?", people) == [0]  # one name: whoever it is
    assert named_authors("What did Caroline say to Melanie?", people) == [0]
    assert named_authors("What does Melanie think of Caroline’s plan?", people) == [1]
    assert named_authors("What is Jon and Melanie's favourite film?", people) == [1, 2]
    assert named_authors("According to Jon, what makes Melanie a good mentor?", people) == [2]
    assert named_authors("Did Caroline's mum meet Jon's dad?", people) == [0, 2]  # all left out: all kept
    assert named_authors("Nobody named here", people) == []
