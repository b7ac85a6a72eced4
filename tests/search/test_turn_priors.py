"""The priors for short turns of a chat (a longer turn holds more, a turn that asks holds less, the
turn after a question inherits part of its match), exactly, and that they switch off where
memories are long, as in user/assistant chats with long assistant answers."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.core.text import ends_with_question, says_when, tokens
from capsule.search import ranking
from capsule.search.query import asks_when

DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
# Ten short turns of four keyword tokens each (no stop words), so the median length is 4.
FILLER = [f"alpha{c} bravo{c} charlie{c} delta{c}." for c in "abcdefghij"]


def store(service, turns, *, session="s1", project="p"):
    ids = []
    for offset, (author, text) in enumerate(turns):
        ids.append(
            service.store_memory(
                "t",
                {
                    "project": project,
                    "content": text,
                    "occurred_at": DAY + timedelta(seconds=offset),
                    "meta": {"author": author, "session": session},
                },
            ).memory.id
        )
    return ids


def only(service, **aids):
    """Every ranking aid off but the ones named (so a boost is exactly what they add)."""
    off = dict(
        author_boost=0.0,
        date_boost=0.0,
        session_boost=0.0,
        answer_boost=0.0,
        length_prior=0.0,
        question_prior=0.0,
        long_length_prior=0.0,
    )
    service._options = replace(service._options, **{**off, **aids})


def hits(service, query, mode="bm25", project="p"):
    result = service.search("t", {"project": project, "query": query, "k": 20, "mode": mode})
    return {h.id: h for h in result.results}


def test_length_prior_is_a_clipped_log_ratio():
    got = ranking.length_prior(np.array([4.0, 8.0, 2.0, 400.0, 0.0]), 4.0)
    assert got.tolist() == pytest.approx([0.0, math.log(2), -math.log(2), 1.0, -1.0])
    assert ranking.length_prior(np.array([3.0]), 0.0).tolist() == pytest.approx([1.0])  # median 0 counts as 1


def test_a_question_is_read_past_bracketed_asides():
    assert ends_with_question("[1:56 pm on 8 May, 2023] Mel: Did you go? [image: a photo of a lake]")
    assert ends_with_question("What do you do to relax?  ")
    assert not ends_with_question("I went. Did you? Yes, twice.")
    assert not ends_with_question("[what?] it rained")
    assert not ends_with_question("")


def test_a_longer_turn_gets_the_length_prior(make_service):
    service = make_service()
    only(service, length_prior=0.1)
    turns = [("A" if i % 2 else "B", t) for i, t in enumerate(FILLER)]
    turns.insert(5, ("A", "kayak alpha bravo charlie delta echo foxtrot golf."))  # 8 tokens
    ids = store(service, turns)
    found = hits(service, "kayak alphaa")
    median = float(np.median([len(tokens(t)) for _, t in turns]))
    assert median == 4.0
    assert found[ids[5]].components.boost == pytest.approx(0.1 * math.log(8 / 4), abs=1e-6)
    assert found[ids[0]].components.boost == pytest.approx(0.0)


def test_a_turn_that_asks_loses_the_question_prior(make_service):
    service = make_service()
    only(service, question_prior=0.05)
    turns = [("A" if i % 2 else "B", t) for i, t in enumerate(FILLER)]
    turns[4] = ("B", "kayak alpha4 bravo4 charlie4?")
    turns[6] = ("B", "kayak alpha6 bravo6 charlie6.")
    ids = store(service, turns)
    found = hits(service, "kayak")
    assert found[ids[4]].components.boost == pytest.approx(-0.05, abs=1e-6)
    assert found[ids[6]].components.boost == pytest.approx(0.0)
    assert found[ids[6]].score > found[ids[4]].score  # same words, same length: the statement wins


def test_the_turn_after_a_question_inherits_part_of_its_score(make_service):
    service = make_service()
    only(service, answer_boost=0.1)
    turns = [("A" if i % 2 else "B", t) for i, t in enumerate(FILLER)]
    turns[4] = ("B", "what kayak do you paddle?")  # the question holds the query's word
    turns[5] = ("A", "a red one from the harbour shop.")  # the answer does not
    ids = store(service, turns)
    found = hits(service, "kayak")
    asked, answer, later = found[ids[4]], found[ids[5]], found[ids[6]]
    assert answer.components.boost == pytest.approx(0.1 * asked.score, abs=1e-6)
    assert asked.components.boost == 0.0 and later.components.boost == 0.0  # turn 5 did not ask


def long_turn_chat(service, project="long"):
    """User/assistant sessions: short user turns (some asking), long assistant answers."""
    ids = []
    for s in range(2):
        turns = []
        for i in range(4):
            turns.append(("user", f"kayak question{s}{i} about paddles?" if i % 2 else f"note{s}{i} harbour kayak."))
            turns.append(("assistant", " ".join(f"detail{s}{i}w{j}" for j in range(60)) + " kayak, last year."))
        ids += store(service, turns, session=f"s{s}", project=project)
    return ids


def test_priors_switch_off_for_long_turn_user_assistant_chats(make_service):
    service = make_service()
    only(service, length_prior=0.1, question_prior=0.05, answer_boost=0.1, when_boost=0.05)
    ids = long_turn_chat(service)
    for mode in ("bm25", "hybrid"):
        found = hits(service, "when was the kayak bought", mode=mode, project="long")
        assert set(found) == set(ids)
        assert {h.components.boost for h in found.values()} == {0.0}
    shape = service.indexes.get("t", "long", service.embedder.model_id).shape()
    assert shape.median_length > service._options.window_max_length  # long memories: not a chat of short turns


def test_the_same_turns_short_get_the_priors(make_service):
    """The control for the test above: the aids are on where the turns are short."""
    service = make_service()
    only(service, length_prior=0.1, question_prior=0.05, answer_boost=0.1)
    turns = [("A" if i % 2 else "B", t) for i, t in enumerate(FILLER)]
    turns[3] = ("A", "kayak question about paddles?")
    ids = store(service, turns)
    found = hits(service, "kayak")
    length = len(tokens(turns[3][1]))
    assert found[ids[3]].components.boost == pytest.approx(-0.05 + 0.1 * math.log(length / 4), abs=1e-6)
    assert found[ids[4]].components.boost == pytest.approx(0.1 * found[ids[3]].score, abs=1e-6)


def test_when_queries_and_turns_that_say_when():
    assert asks_when("When did Mel buy a kayak?") and asks_when("what year was it")
    assert not asks_when("Where did Mel buy a kayak?")
    assert says_when("[8 May, 2023] Mel: I bought it last week!") and says_when("On Sunday we sailed")
    assert not says_when("[8 May, 2023] Mel: I bought a kayak!")  # the stamp is an aside, not said


def test_a_when_query_lifts_the_turn_that_says_when(make_service):
    service = make_service()
    only(service, when_boost=0.05)
    turns = [("A" if i % 2 else "B", t) for i, t in enumerate(FILLER)]
    turns[4] = ("B", "[8 May, 2023] I bought a kayak yesterday.")
    turns[6] = ("B", "[8 May, 2023] I love my kayak, truly.")
    ids = store(service, turns)
    asked = hits(service, "When did B buy the kayak?")
    assert (asked[ids[4]].components.boost, asked[ids[6]].components.boost) == (pytest.approx(0.05, abs=1e-6), 0.0)
    plain = hits(service, "Which kayak did B buy?")  # not a when question: no lift
    assert {plain[ids[4]].components.boost, plain[ids[6]].components.boost} == {0.0}
