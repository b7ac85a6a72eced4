"""The user-fact model: its features, its committed weights and the record of what trained them."""

import json

import pytest

from capsule.capture import user_facts
from capsule.capture.features import NAMES, user_turn_features


def feature(text: str, name: str) -> float:
    return user_turn_features(text)[NAMES.index(name)]


def test_every_feature_is_named_and_bounded():
    values = user_turn_features("By the way, I just moved to Denver with my sister on May 3rd. Can you help? " * 5)
    assert len(values) == len(NAMES) and all(0.0 <= v <= 1.0 for v in values)


def test_a_question_only_turn_and_a_statement_differ_where_they_should():
    asks = "Can you recommend a good dog walker in my area?"
    tells = "I adopted a golden retriever named Max last month."
    assert feature(asks, "only_asks") == 1.0 and feature(tells, "only_asks") == 0.0
    assert feature(asks, "fact_share") == 0.0 and feature(tells, "fact_share") == 1.0
    assert feature(tells, "event") > 0 and feature(tells, "when") > 0


def test_people_in_the_users_life_and_asides_are_features():
    text = "By the way, my cousin Alex just adopted a baby girl in January."
    assert feature(text, "aside") == 1.0 and feature(text, "people") > 0 and feature(text, "third_person") > 0


def test_the_weights_match_the_features_and_record_the_training_split():
    data = json.loads(user_facts.WEIGHTS.read_text("utf-8"))
    assert data["features"] == list(NAMES) and len(data["weights"]) == len(NAMES)
    assert "even" in data["trained_on"]["split"] and len(data["trained_on"]["sha256"]) == 64
    assert 0 < data["threshold"] < 1


@pytest.mark.parametrize("p", [0.0, 0.05, 0.3, 0.9, 1.0])
def test_rescale_is_increasing_and_puts_the_threshold_at_the_operating_point(p):
    t = 0.2
    assert user_facts.rescale(t, t) == pytest.approx(user_facts.OPERATING_POINT)
    assert user_facts.rescale(0.0, t) == 0.0 and user_facts.rescale(1.0, t) == pytest.approx(1.0)
    assert user_facts.rescale(p, t) <= user_facts.rescale(min(1.0, p + 0.01), t)


def test_a_statement_of_the_users_own_event_outscores_a_request():
    told = user_facts.probability("By the way, I just got back from a 3-day camping trip to Big Sur in April.")
    asked = user_facts.probability("Can you recommend some hiking boots?")
    assert 0 < asked < told < 1


def test_a_liking_that_answers_a_suggestion_is_no_stated_preference():
    assert feature("I like the idea of virtual coffee breaks.", "fact_share") == 0.0
    assert feature("I like the idea of virtual coffee breaks.", "preference") == 0.0
    assert feature("I love hiking in the fall with my dog.", "fact_share") == 1.0
    assert feature("I love hiking in the fall with my dog.", "preference") > 0


def test_the_weights_were_trained_on_the_hand_fact_labels_of_the_even_half():
    trained = json.loads(user_facts.WEIGHTS.read_text("utf-8"))["trained_on"]
    assert trained["labels"].startswith("tests/capture/longmemeval_fact_labels.json")
    assert trained["left_out_shared_with_odd"] >= 0 and trained["user_turns"] > 300
