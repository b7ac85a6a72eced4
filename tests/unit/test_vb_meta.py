"""A Vector Bridge caller's meta (any JSON object) is stored and given back exactly as sent, while
our typed fields get our reading of it (COMPAT §2.5, §2.6)."""

from __future__ import annotations

import pytest

from capsule.compat.vector_bridge import KEPT_KEY, meta_as_sent, meta_request, outcome_of
from capsule.core.errors import InvalidInput
from capsule.core.models import MemoryMeta

SENT = [
    {},
    {"outcome_status": "none", "agent": "IE", "task_id": "auth-fix"},  # the stop hook's default
    {"outcome_status": "failed"},
    {"outcome_status": "partial"},
    {"outcome_status": "expected"},
    {"outcome_status": "SUCCESS"},
    {"outcome_status": None},
    {"outcome_status": "unknown"},
    {"tags": "auth"},
    {"tags": ["auth", 7, None]},
    {"type": 5},
    {"component": None, "category": ["x"]},
    {"outcome": "success"},
    {"a.b": 1, "$where": {"c": [1, None]}},
    {"nested": {"deep": {"er": [1.5, True]}}},
    {KEPT_KEY: "a caller's own key of our name"},
    {"id": 42, "repo_name": "my-app", "confidence": 0.95, "keywords": ["redis", "docker"]},
]


@pytest.mark.parametrize("sent", SENT, ids=[str(i) for i in range(len(SENT))])
def test_meta_is_stored_within_our_rules_and_given_back_as_sent(sent):
    stored = meta_request(sent)
    MemoryMeta.model_validate(stored)  # our API takes it (so both stores can hold it)
    assert meta_as_sent(stored) == sent


@pytest.mark.parametrize(
    ("meta", "outcome"),
    [
        ({"outcome_status": "success"}, "success"),
        ({"outcome_status": "SUCCESS"}, "success"),
        ({"outcome_status": "failed"}, "failure"),
        ({"outcome_status": "failure"}, "failure"),
        ({"outcome_status": "none"}, "unknown"),
        ({"outcome_status": "partial"}, "unknown"),
        ({"outcome_status": "expected"}, "unknown"),
        ({"outcome_status": ""}, "unknown"),
        ({"outcome_status": "", "outcome": "success"}, "success"),  # empty: the original read `outcome`
        ({"outcome_status": None, "outcome": "failed"}, "failure"),
        ({"outcome_status": 3}, "unknown"),
    ],
)
def test_outcome_spellings_map_onto_ours_for_ranking(meta, outcome):
    assert outcome_of(meta) == outcome
    assert meta_request(meta)["outcome_status"] == outcome


def test_a_string_tag_is_read_as_one_tag_and_kept_as_sent():
    stored = meta_request({"tags": "auth"})
    assert stored["tags"] == ["auth"]
    assert meta_as_sent(stored) == {"tags": "auth"}


def test_a_meta_our_own_api_stored_comes_back_as_stored():
    ours = MemoryMeta.model_validate({"type": "fix", "tags": ["a"]}).plain()
    assert meta_as_sent(ours) == ours


def test_only_a_meta_over_our_size_limit_is_refused_and_it_names_meta():
    with pytest.raises(InvalidInput) as err:
        meta_request({"blob": "x" * 20_000})
    assert err.value.details[0]["field"] == "meta"
