"""``capsule eval capture --labels``: hand fact labels of LongMemEval user turns, loaded,
checked against the dataset, and scored (precision / recall against the fact labels and
against has_answer on the same sample), with the expected numbers worked out by hand."""

import hashlib
import json
from pathlib import Path

import pytest

from capsule import InvalidInput
from capsule.capture import fact_labels
from capsule.capture.evaluation import evaluate
from capsule_cli import evaluate_capture

HERE = Path(__file__).parent
DATA = Path("/work/shared/data/longmemeval-dev.json")

# Texts whose fate under the scorer tests/capture/test_capture_scoring.py pins down.
ASIDE = "By the way, I just got back from a 3-day solo camping trip to Big Sur in early April."  # proposed
RIDE = "I rode the Revenge of the Mummy rollercoaster three times in a row at Universal Studios on October 15th."
AGE = "I'm currently 32 years old, so I want products that suit my skin."  # proposed
ASK = "Can you recommend some good yoga studios near me?"  # not proposed
THANKS = "Thanks, that's really helpful!"  # not proposed
REACTION = "I like the idea of virtual coffee breaks."  # not proposed


def user(text, has_answer=False):
    return {"role": "user", "content": text, **({"has_answer": True} if has_answer else {})}


def assistant(text="Here are some ideas."):
    return {"role": "assistant", "content": text}


def dataset():
    even = {
        "question_id": "q-even",
        "haystack_sessions": [
            [user(ASIDE, has_answer=True), assistant(), user(ASK), assistant(), user(RIDE), assistant(), user(THANKS)]
        ],
    }
    odd = {
        "question_id": "q-odd",
        "haystack_sessions": [
            [
                user("I recently attended a two-day digital marketing workshop at the city convention center.")
            ],  # unlabelled
            [user(REACTION), user(AGE), user(ASK, has_answer=True), user(ASIDE)],
        ],
    }
    return [even, odd]


def label(question, session, turn, fact, why="test"):
    return {"question_id": question, "session": session, "turn": turn, "fact": fact, "why": why}


LABELS = [
    label("q-even", 0, 0, False),  # has_answer: a fact whatever the label says
    label("q-even", 0, 2, False),
    label("q-even", 0, 4, True),
    label("q-even", 0, 6, True),  # a fact the scorer misses
    label("q-odd", 1, 0, False),
    label("q-odd", 1, 1, True),
    label("q-odd", 1, 2, True),  # has_answer, not proposed
    label("q-odd", 1, 3, False),  # proposed though labelled no fact
]
PROPOSED = [True, False, True, False, False, True, False, True]  # what the scorer does with each labelled turn

# By hand. even: facts {0, 4, 6}, proposed {0, 4}: precision 2/2, recall 2/3; has_answer {0}: 1/2, 1/1.
# odd: facts {1, 2}, proposed {1, 3}: 1/2, 1/2; has_answer {2}: 0/2, 0/1.
# all: facts 3 of 4 proposed right, 3 of 5 found; has_answer 1 of 4, 1 of 2.
EXPECTED_FACTS = {"even": (1.0, 0.667, 3, 2), "odd": (0.5, 0.5, 2, 2), "all": (0.75, 0.6, 5, 4)}
EXPECTED_HAS_ANSWER = {"even": (0.5, 1.0, 1, 2), "odd": (0.0, 0.0, 1, 2), "all": (0.25, 0.5, 2, 4)}


def file(labels=LABELS, **extra):
    return {"format": fact_labels.FORMAT, "version": 1, "labels": labels, **extra}


def numbers(report):
    return {split: (m["precision"], m["recall"], m["positives"], m["proposed"]) for split, m in report.items()}


def test_the_labelled_sample_and_its_metrics_are_the_hand_computed_ones():
    sample = fact_labels.sample(dataset(), fact_labels.parse(file()))
    scored = [0.9 if p else None for p in PROPOSED]
    assert numbers(evaluate(sample.facts, scored=scored)) == EXPECTED_FACTS
    assert numbers(evaluate(sample.has_answer, scored=scored)) == EXPECTED_HAS_ANSWER
    assert sample.agreement == {
        "even": {"turns": 4, "labelled_fact": 2, "has_answer": 1, "has_answer_labelled_fact": 0},
        "odd": {"turns": 4, "labelled_fact": 2, "has_answer": 1, "has_answer_labelled_fact": 1},
    }


def test_eval_capture_with_labels_scores_the_sample_and_keeps_the_has_answer_numbers(tmp_path):
    data, labels = tmp_path / "lme.json", tmp_path / "labels.json"
    data.write_text(json.dumps(dataset()))
    labels.write_text(
        json.dumps(file(dataset={"file": "lme.json", "sha256": hashlib.sha256(data.read_bytes()).hexdigest()}))
    )
    report = evaluate_capture.run(data, labels=labels, with_curve=True)
    facts = report["fact_labels"]
    assert numbers(facts["facts"]) == EXPECTED_FACTS and numbers(facts["has_answer"]) == EXPECTED_HAS_ANSWER
    # the whole file's has_answer numbers stay: every turn (the unlabelled one and the assistant's too)
    assert report["splits"]["all"]["events"] == 12 and report["splits"]["all"]["positives"] == 2
    assert len(facts["curve"]) == len(report["curve"])
    text = evaluate_capture.text(report)
    assert (
        "fact precision" in text and "has_answer turns the annotator labelled a fact: even 0 of 1, odd 1 of 1" in text
    )


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        ([{**label("q-even", 0, 0, True), "text": "copied"}], "labels[0].text"),
        ([label("q-even", "0", 0, True)], "labels[0].session"),
        ([label("q-even", 0, True, True)], "labels[0].turn"),
        ([label("q-even", 0, 0, "yes")], "labels[0].fact"),
        ([label("q-even", 0, 0, True), label("q-even", 0, 0, False)], "labels[1]"),
        ([], "labels.labels"),
    ],
)
def test_a_malformed_label_is_refused_naming_it(labels, field):
    with pytest.raises(InvalidInput) as caught:
        fact_labels.parse(file(labels))
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (label("q-none", 0, 0, True), "labels[0].question_id"),
        (label("q-even", 1, 0, True), "labels[0].session"),
        (label("q-even", 0, 7, True), "labels[0].turn"),
        (label("q-even", 0, 1, True), "labels[0].turn"),  # an assistant turn
    ],
)
def test_a_label_of_no_user_turn_in_the_dataset_is_refused(item, field):
    with pytest.raises(InvalidInput) as caught:
        fact_labels.sample(dataset(), fact_labels.parse(file([item])))
    assert caught.value.field == field


def test_labels_of_another_file_or_of_a_non_longmemeval_set_are_refused(tmp_path):
    with pytest.raises(InvalidInput) as caught:
        fact_labels.parse(file(dataset={"sha256": "0" * 64}), dataset_sha256="1" * 64)
    assert caught.value.field == "labels.dataset.sha256"
    with pytest.raises(InvalidInput) as caught:
        fact_labels.parse({"format": "capsule-capture-eval", "events": []})
    assert caught.value.field == "labels"
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(file()))
    with pytest.raises(InvalidInput) as caught:
        evaluate_capture.run(HERE / "coding_sessions.json", labels=labels)
    assert caught.value.field == "labels"


# LongMemEval (a research data set, not ours to commit) is read where the machine keeps it; the
# committed labels are checked without it by the tests above, so this one skips where it is absent.
@pytest.mark.skipif(not DATA.exists(), reason="LongMemEval is not in /work/shared/data (not part of the checkout)")
def test_the_committed_labels_are_every_user_turn_of_the_sampled_questions_and_hold_no_text():
    from tests.capture.fact_label_sample import sampled_positions, user_turns

    raw = DATA.read_bytes()
    questions = json.loads(raw)
    committed = json.loads((HERE / "longmemeval_fact_labels.json").read_text("utf-8"))
    parsed = fact_labels.parse(committed, dataset_sha256=hashlib.sha256(raw).hexdigest())
    sample = fact_labels.sample(questions, parsed)  # refuses any reference to a turn that is not a user's
    expected = {
        (questions[p]["question_id"], s, t)
        for half in ("even", "odd")
        for p in sampled_positions(len(questions), half)
        for s, t, _ in user_turns(questions[p])
    }
    assert {(i["question_id"], i["session"], i["turn"]) for i in parsed} == expected
    assert {split: a["turns"] for split, a in sample.agreement.items()} == {"even": 351, "odd": 324}
    texts = {t["content"] for q in questions for s in q["haystack_sessions"] for t in s}
    assert all(len(i["why"]) <= 60 and i["why"] not in texts for i in parsed)
