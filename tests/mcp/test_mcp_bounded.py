"""The size rules every tool result follows."""

from __future__ import annotations

from mcp_client.bounded import excerpt, fit


def test_an_excerpt_marks_what_it_cut_and_keeps_within_the_limit():
    text = "x" * 5000
    cut, was_cut = excerpt(text, 1200)
    kept = cut.split(" … ")[0]
    assert was_cut and len(cut) <= 1200 and cut.endswith(f"[+{5000 - len(kept)} chars]")
    assert excerpt("short", 1200) == ("short", False)


def test_fit_keeps_the_longest_prefix_within_the_budget_but_always_one_item():
    assert fit([100, 100, 100], 250, lambda n: n) == ([100, 100], 1)
    assert fit([900, 10], 500, lambda n: n) == ([900], 1)  # one oversized item is still shown
    assert fit([], 500, lambda n: n) == ([], 0)
    assert fit([10, 10], 500, lambda n: n) == ([10, 10], 0)
