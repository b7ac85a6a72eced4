"""``capsule eval capture``'s curve: one scoring pass, the same numbers as a threshold run."""

import json
from pathlib import Path

from capsule.capture.evaluation import CURVE, curve, evaluate, labelled_events
from capsule.capture.scoring import score_event
from capsule_cli import evaluate_capture

SET = Path(__file__).with_name("coding_sessions.json")


def test_each_point_of_the_curve_is_the_evaluation_at_its_threshold():
    _, events = labelled_events(json.loads(SET.read_text("utf-8")))
    points = curve(events)
    assert [p["threshold"] for p in points] == list(CURVE)
    for point in (points[0], points[-1]):
        assert point["splits"] == evaluate(events, threshold=point["threshold"])
    proposed = [p["splits"]["all"]["proposed"] for p in points]
    assert proposed == sorted(proposed, reverse=True)  # a higher threshold never proposes more


def test_the_report_has_the_curve_and_the_cost_per_event():
    report = evaluate_capture.run(SET, with_curve=True)
    assert report["microseconds_per_event"] > 0 and len(report["curve"]) == len(CURVE)
    text = evaluate_capture.text(report)
    assert "precision/recall by threshold" in text and "microseconds of CPU per event" in text
    held = report["splits"]["held_out"]
    assert held["precision"] >= 0.8 and held["recall"] >= 0.7


def test_the_default_counts_exactly_what_the_scorer_proposes_though_scored_below_it():
    _, events = labelled_events(json.loads(SET.read_text("utf-8")))
    proposed = sum(score_event(item.event) is not None for item in events)
    assert evaluate(events)["all"]["proposed"] == proposed
    assert evaluate(events, threshold=min(CURVE))["all"]["proposed"] >= proposed


def test_a_threshold_below_the_curve_is_scored_from_that_low():
    low = evaluate_capture.run(SET, threshold=0.2)["splits"]["all"]["proposed"]
    assert low >= evaluate_capture.run(SET, threshold=min(CURVE))["splits"]["all"]["proposed"]
