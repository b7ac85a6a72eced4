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


def _gate_texts() -> list[str]:
    """The labelled and corpus texts, joined in pairs and cut anywhere (as chunks are), and a
    few the gates must let through (international phones, spaced cards and IBANs, non-ASCII digits)."""
    import random

    base = [text for text, _ in labelled_cases()] + [t[0] if isinstance(t, tuple) else t for t in TRUE_POSITIVES]
    base += [t[0] if isinstance(t, tuple) else t for t in FALSE_POSITIVES]
    base += [
        "call +49 30 1234567 or (415) 555-0132 or 415-555-0132",
        "card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00, GB82 WEST 1234 5698 7654 32",
        "mail bob@mail.company.com",
        "٤١١١١١١١١١١١١١١١ card, phone +٤٩ ٣٠ 1234567",
    ]
    rng = random.Random(32)
    out = list(base)
    for _ in range(1500):
        text = rng.choice(base) + rng.choice([" ", "\n\n", "", " é "]) + rng.choice(base)
        start = rng.randint(0, len(text))
        out.append(text[start : rng.randint(start, len(text))])
    return out


def test_the_gates_skip_only_texts_their_detector_finds_nothing_in():
    """Issue 32: each detector's gate (an RE2 scan for what every match holds) may skip a text
    only when the detector's own pattern matches nowhere in it, so no finding is lost."""
    import importlib

    d = importlib.import_module("capsule.guard.detect")  # the module (the package exports its function)
    gated = ((d.CARD, d.CARD_GATE), (d.IBAN_START, d.IBAN_GATE), (d.PHONE, d.PHONE_GATE))
    for text in _gate_texts():
        for pattern, gate in gated:
            if pattern.search(text) is not None:
                assert d._gated(gate, text), (pattern.pattern, text)
        if d.EMAIL.search(text) is not None:
            assert "@" in text
        subject = d._subject(text)
        if any(regex.search(subject) is not None for _, regex in d._COMPILED):
            assert d._ANY_RULE.search(subject) is not None, text
