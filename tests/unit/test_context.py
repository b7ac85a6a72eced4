"""What a memory is embedded as (capsule.service.context), and the service and backfill using it."""

from __future__ import annotations

from datetime import UTC

import numpy as np
import pytest

from capsule.config import Settings
from capsule.embedders import HashingEmbedder
from capsule.service.context import embedding_text, session_of
from capsule.service.memory_service import MemoryService

ASK = "[1:56 pm on 8 May, 2023] Nate: What genre is your first screenplay?"
ANSWER = "[1:57 pm on 8 May, 2023] Joanna: Thanks, Nate! It's a mix of drama and romance!"


def test_a_short_turn_is_embedded_after_the_short_turn_before_without_its_stamp():
    assert embedding_text(ANSWER, ASK) == "Nate: What genre is your first screenplay?\n" + ANSWER


@pytest.mark.parametrize("before", [None, ""])
def test_a_first_turn_is_embedded_alone(before):
    assert embedding_text(ANSWER, before) == ANSWER


def test_long_memories_are_embedded_alone():
    long_answer = "Here is how to do it. " * 20  # 100 words: an assistant's answer, a document
    assert embedding_text(long_answer, ASK) == long_answer
    assert embedding_text(ANSWER, long_answer) == ANSWER  # a long turn before would crowd this one out
    assert embedding_text(ANSWER, ASK, max_words=0) == ANSWER  # switched off


@pytest.mark.parametrize(
    "meta,expected",
    [
        ({"session": "s1"}, "s1"),
        ({"session": 7}, 7),
        ({}, None),
        ({"session": ""}, None),
        ({"session": True}, None),
        ({"session": ["a"]}, None),
        ({"session": {"id": 1}}, None),
    ],
)
def test_only_a_plain_session_value_counts(meta, expected):
    assert session_of(meta) == expected


def _turn(service, content, session="session 1", **extra):
    request = {"project": "chat", "content": content, "meta": {"session": session, **extra}}
    return service.store_memory("t", request).memory.id


def test_the_service_embeds_a_turn_with_the_one_before_it_in_its_session(service, sqlite_store, clock):
    embedder = HashingEmbedder()
    first = _turn(service, ASK)
    clock.advance(seconds=1)
    other = _turn(service, "[2:00 pm on 8 May, 2023] Nate: Unrelated, in another session.", session="session 2")
    clock.advance(seconds=1)
    second = _turn(service, ANSWER)
    alone = embedder.embed([ANSWER])[0]
    with_context = embedder.embed([embedding_text(ANSWER, ASK)])[0]
    assert np.allclose(sqlite_store.get("t", first).embedding, embedder.embed([ASK])[0])
    assert np.allclose(
        sqlite_store.get("t", other).embedding, embedder.embed([sqlite_store.get("t", other).content])[0]
    )
    assert np.allclose(sqlite_store.get("t", second).embedding, with_context)
    assert not np.allclose(with_context, alone)
    assert sqlite_store.get("t", second).content == ANSWER  # only the vector sees the context


def test_a_forgotten_turn_is_no_context_and_the_setting_turns_it_off(sqlite_store, clock, tmp_path):
    embedder = HashingEmbedder()
    service = MemoryService(
        sqlite_store, embedder, clock=clock, settings=Settings(data_dir=tmp_path, embedder="hashing")
    )
    asked = _turn(service, ASK)
    service.forget("t", asked)
    clock.advance(seconds=1)
    answer = _turn(service, ANSWER)
    assert np.allclose(sqlite_store.get("t", answer).embedding, embedder.embed([ANSWER])[0])
    off = MemoryService(
        sqlite_store,
        embedder,
        clock=clock,
        settings=Settings(data_dir=tmp_path, embedder="hashing", session_context_words=0),
    )
    clock.advance(seconds=1)
    _turn(off, ASK.replace("first", "second"))
    clock.advance(seconds=1)
    late = _turn(off, ANSWER.replace("drama", "comedy"))
    assert np.allclose(sqlite_store.get("t", late).embedding, embedder.embed([ANSWER.replace("drama", "comedy")])[0])


def test_an_import_takes_the_turn_that_happened_before_not_the_one_stored_last(service, sqlite_store):
    from datetime import datetime

    embedder = HashingEmbedder()
    at = lambda minute: datetime(2023, 5, 8, 13, minute, tzinfo=UTC)  # noqa: E731
    late = "[8 May] Nate: And what about the ending?"
    for content, minute in ((late, 30), (ASK, 10)):  # stored out of order
        service.store_memory(
            "t", {"project": "chat", "content": content, "occurred_at": at(minute), "meta": {"session": "s"}}
        )
    answer = service.store_memory(
        "t", {"project": "chat", "content": ANSWER, "occurred_at": at(11), "meta": {"session": "s"}}
    ).memory.id
    assert np.allclose(sqlite_store.get("t", answer).embedding, embedder.embed([embedding_text(ANSWER, ASK)])[0])


def test_the_sqlite_look_up_is_one_index_probe(sqlite_store):
    from capsule.store.sqlite_reads import PREVIOUS_IN_SESSION

    plan = sqlite_store._read(f"EXPLAIN QUERY PLAN {PREVIOUS_IN_SESSION}", ("t", "p", "s", 1.0))
    assert any("USING INDEX memories_session" in row["detail"] for row in plan)
