"""One length prior for every conversation, read against the project's own lower-quartile length
(``length_model="quartile"``): a turn that says more than the short ones gains, an answer far
longer than them loses, whatever the median is, so no switch on the median length decides
which way long memories lean."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from capsule import ranking
from capsule.text import tokens

AT = datetime(2023, 5, 1, tzinfo=timezone.utc)


def test_the_prior_rises_to_e_times_the_quartile_then_falls():
    got = ranking.rise_fall_prior(np.array([10.0, 20.0, 10 * math.e, 10 * math.e ** 2, 10 * math.e ** 5, 0.0]),
                                  10.0, 0.1, 0.2)
    assert got.tolist() == pytest.approx([0.0, 0.1 * math.log(2), 0.1, 0.1 - 0.2, 0.1 - 0.4, -0.1])


def chat(service, sessions):
    ids = {}
    for s, turns in enumerate(sessions):
        for i, (author, text) in enumerate(turns):
            ids[text] = service.store_memory("t", {
                "project": "p", "content": text, "occurred_at": AT + timedelta(days=s, seconds=i),
                "meta": {"author": author, "session": f"s{s}"}}).memory.id
    return ids


def boosts(service, query):
    return {h.id: h.components.boost
            for h in service.search("t", {"project": "p", "query": query, "k": 20, "mode": "bm25"}).results}


def priors_only(service, **changes):
    service._options = replace(service._options, author_boost=0.0, date_boost=0.0, session_boost=0.0,
                               answer_boost=0.0, when_boost=0.0, question_prior=0.0, **changes)


def test_long_answers_lean_down_even_where_most_turns_are_short(make_service):
    # Mostly short user turns (the median is short: a "chat of short turns"), a few long answers.
    answer = "Here is more on kayaks: " + " ".join(f"kayak tip{i} paddle{i} river{i}" for i in range(30))
    sessions = [[("user", f"my kayak trip number {s}{i} went fine") for i in range(6)] + [("assistant", answer + f" {s}")]
                for s in range(3)]
    sessions[0].append(("user", "my kayak is a blue Dagger Katana bought in Leeds last spring for the river trips"))
    service = make_service(query_cache_entries=0)
    ids = chat(service, sessions)
    index = service.indexes.get("t", "p", service.embedder.model_id)
    long_id, fact_id = ids[answer + " 0"], ids[sessions[0][-1][1]]
    priors_only(service)
    got = boosts(service, "kayak")
    assert index.shape().median_length <= service._options.window_max_length
    assert got[long_id] < 0 < got[fact_id]  # the long answer leans down, the turn that says more up
    quartile = float(np.percentile([len(tokens(t)) for turns in sessions for _, t in turns], 25))
    expected = ranking.rise_fall_prior(np.array([len(tokens(sessions[0][-1][1]))]), quartile, 0.1, 0.2)[0]
    assert got[fact_id] == pytest.approx(expected, abs=1e-6)
    priors_only(service, length_model="median")  # the switch before: short median, so long answers gain
    before = boosts(service, "kayak")
    assert before[long_id] > 0


def test_memories_outside_conversations_get_no_length_prior(make_service):
    service = make_service(query_cache_entries=0)
    short = service.store_memory("t", {"project": "p", "content": "kayak"}).memory.id
    long = service.store_memory("t", {"project": "p", "content": " ".join(["kayak river"] * 40)}).memory.id
    got = boosts(service, "kayak")
    assert got[short] == 0.0 and got[long] == 0.0
