"""Irregular verb forms meet their base form in keyword search."""

from __future__ import annotations

from capsule.core.text import tokens
from capsule.search.ranking import bm25


def test_irregular_forms_become_their_base():
    assert tokens("I went and bought it") == ["go", "buy"]
    assert tokens("we won, they ran") == tokens("we win, they run") == ["win", "run"]
    assert tokens("Does it go?") == ["go"]  # base forms are untouched; forms of do/have stay stop words


def test_a_query_in_the_present_finds_a_memory_in_the_past():
    docs = [tokens("Yesterday I bought a kayak"), tokens("I like kayaks")]
    scores = bm25(tokens("when did she buy it"), docs)
    assert scores[0] > 0 and scores[1] == 0
