"""Long memories (an assistant's answers) beside short facts: where the median memory is long,
BM25 normalises length fully (``long_b``) and a prior leans to the shorter memory
(``long_length_prior``), so an answer that repeats the query's words does not bury the short
turn that holds the fact; chats of short turns keep ``b`` and their own priors."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

AT = datetime(2023, 5, 1, tzinfo=UTC)
ANSWER = "Sure! Here are some thoughts on a commute by bike: " + " ".join(
    f"tip{i} about routes, gear and safety when you commute by bike every day" for i in range(8)
)


def turns(service, pairs):
    ids = []
    for i, (author, text) in enumerate(pairs):
        ids.append(
            service.store_memory(
                "t",
                {
                    "project": "p",
                    "content": text,
                    "occurred_at": AT + timedelta(seconds=i),
                    "meta": {"author": author, "session": "s1"},
                },
            ).memory.id
        )
    return ids


def top_bm25(service, query):
    return service.search("t", {"project": "p", "query": query, "k": 3, "mode": "bm25"}).results[0].id


def test_a_short_fact_beats_a_long_answer_that_repeats_the_words(make_service):
    service = make_service(query_cache_entries=0)
    ids = turns(
        service,
        [
            ("user", "I commute by bike, 12 km each way."),
            ("assistant", ANSWER),
            ("user", "What gear should I buy?"),
            ("assistant", ANSWER + " Also lights."),
            ("assistant", ANSWER + " And a lock."),
        ],
    )
    assert top_bm25(service, "how far do I commute by bike") == ids[0]
    old = replace(service._options, long_b=service._options.b, long_length_prior=0.0)  # the ranking before
    service._options = replace(old, long_length_prior=-0.1)
    assert top_bm25(service, "how far do I commute by bike") == ids[0]  # the length prior alone lifts it too
    service._options = old
    assert top_bm25(service, "how far do I commute by bike") != ids[0]


def test_short_turns_keep_b(service):
    from capsule.search.hybrid import _length_b

    turns(service, [("a", f"short turn number {i} about bikes") for i in range(6)])
    index = service.indexes.get("t", "p", service.embedder.model_id)
    service.search("t", {"project": "p", "query": "bikes", "mode": "bm25"})
    assert _length_b(index, service._options) == service._options.b == 0.75
