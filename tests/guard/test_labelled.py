"""Issue 37: the secret rules on a labelled set of texts agents store (tests/guard/labelled.py),
half look-alikes; precision and recall per kind, exact spans."""

import pytest

from capsule.guard.checks import github_checksum, github_checksum_ok, placeholder, random_enough
from capsule.guard.detect import detect
from capsule.guard.policy import Policies, guard_text

from .evaluate import expected, ours, render, score
from .labelled import FAKE, LOOKALIKES, SECRETS, labelled_cases

CASES = labelled_cases()


def test_the_set_is_large_and_half_look_alikes():
    assert len(CASES) >= 150
    assert len(LOOKALIKES) >= 0.45 * len(CASES)


def test_precision_and_recall_per_kind(capsys):
    table = score(cases=CASES)
    with capsys.disabled():
        print(f"\n{len(SECRETS)} texts with secrets, {len(LOOKALIKES)} look-alikes\n{render(table)}")
    for kind, row in table.items():
        assert row["recall"] >= 0.95, (kind, row)
        assert row["precision"] >= 0.97, (kind, row)


@pytest.mark.parametrize("text", LOOKALIKES)
def test_a_look_alike_holds_no_secret(text):
    assert [f for f in detect(text) if f.category == "secrets"] == []


@pytest.mark.parametrize(
    "text,labels", [c for c in CASES if c[1]], ids=lambda v: str(v)[:40] if isinstance(v, str) else None
)
def test_a_secret_is_found_with_its_exact_span(text, labels):
    assert set(ours(text)) >= expected(text, labels)


def test_a_secret_is_redacted_not_flagged_as_personal_data():
    text = f"mongodb+srv://svc-reader:{FAKE['pw_url2']}@cluster0.q7xk2.mongodb.net/app"
    guarded = guard_text(text, Policies())
    assert guarded.text == "mongodb+srv://svc-reader:[REDACTED:url-credential]@cluster0.q7xk2.mongodb.net/app"
    assert guarded.report["pii"] == [] and [f["kind"] for f in guarded.report["secrets"]] == ["url-credential"]


def test_a_placeholder_password_in_a_url_is_neither_secret_nor_email():
    assert detect("mongodb+srv://user:pw@cluster0.ab1cd.mongodb.net/test") == []


def test_github_checksum():
    token = github_checksum("ghp", "Qm7ZtR2vLx9KpW4nBc8YhJ3dF6sA1e")
    assert github_checksum_ok(token)
    assert not github_checksum_ok(token[:-1] + ("A" if token[-1] != "A" else "B"))


def test_a_github_token_a_few_characters_off_is_still_found():
    for body in (FAKE["ghp"][4:-3], FAKE["ghp"][4:] + "Zq9"):
        text = f"GH_TOKEN=ghp_{body}"
        assert [f.kind for f in detect(text)] == ["github-token"], text


def test_placeholders_and_randomness():
    for value in (
        "<your-token-here>",
        "${GITHUB_TOKEN}",
        "xxxxxxxxxxxx",
        "changeme",
        "AKIAIOSFODNN7EXAMPLE",
        "your_api_key",
        "****************",
    ):
        assert placeholder(value), value
    assert random_enough(FAKE["gen1"]) and not random_enough("aaaaaaaaaaaaaaaaaaaaaaaa")
