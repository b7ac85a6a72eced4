"""The detector on the labelled corpus (precision and recall per kind) and on edge cases."""

import pytest

from capsule.guard.checks import iban_ok, jwt_header_ok, luhn_ok
from capsule.guard.detect import KINDS, detect

from .corpus import AKIA, FALSE_POSITIVES, PEM, TRUE_POSITIVES
from .evaluate import expected, ours, score
from .labelled import labelled_cases


def test_every_kind_is_in_a_labelled_set():
    kinds = {kind for _, labels in TRUE_POSITIVES + labelled_cases() for kind, _ in labels}
    assert kinds == set(KINDS)


def test_precision_and_recall_per_kind():
    table = score()
    for kind, row in table.items():
        assert row["precision"] >= 0.95, (kind, row)
        assert row["recall"] >= 0.75, (kind, row)
    assert sum(row["fp"] for row in table.values()) == 0


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_hard_negatives_find_nothing(text):
    assert detect(text) == []


@pytest.mark.parametrize("text,labels", TRUE_POSITIVES[:-2])
def test_true_positives_have_exact_spans(text, labels):
    assert set(ours(text)) == expected(text, labels)


def test_checks():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89370400440532013000") and not iban_ok("DE89370400440532013001")
    assert not iban_ok("XX89370400440532013000")
    assert jwt_header_ok("eyJhbGciOiJIUzI1NiJ9") and not jwt_header_ok("eyJub3QiOiJqd3QifQ")


def test_a_key_inside_a_private_key_block_is_one_finding():
    text = PEM.replace("MIIEow", AKIA)
    assert [f.kind for f in detect(text)] == ["private-key"]


def test_findings_are_ordered_and_disjoint():
    text = f"{AKIA} jane@acme.io {AKIA}"
    found = detect(text)
    assert [f.kind for f in found] == ["aws-access-key", "email", "aws-access-key"]
    assert all(a.end <= b.start for a, b in zip(found, found[1:]))


def test_a_pem_block_without_its_end_line_is_still_a_key():
    text = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (truncated)"
    assert [(f.kind, f.start, f.end) for f in detect(text)] == [("private-key", 0, len(text))]
