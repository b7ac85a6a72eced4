"""Reading a query for what it names: people (matched against memory authors) and dates.

Pure functions over the query text; cheap (a few regexes), so they cost microseconds.
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..core.text import tokens

MONTHS = {
    name: number
    for number, name in enumerate(
        "january february march april may june july august september october november december".split(), start=1
    )
}
MONTHS.update({name[:3]: number for name, number in list(MONTHS.items())})
MONTHS["sept"] = 9
_M = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
MONTH_PATTERN = _M  # a month's name, whole or shortened, as one regex group
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M},?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_M},?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of time a query names: [start, end)."""

    start: datetime
    end: datetime


def _day(year: int, month: int, day: int) -> Span | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return Span(start, start + timedelta(days=1))


def named_dates(query: str) -> list[Span]:
    """Days, months or years the query names, most precise first; a year is used only alone."""
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []

    def free(match: re.Match) -> bool:
        return all(match.end() <= a or match.start() >= b for a, b in taken)

    for match in _ISO.finditer(query):
        if span := _day(int(match.group(1)), int(match.group(2)), int(match.group(3))):
            spans.append(span)
            taken.append(match.span())
    for pattern, order in ((_DAY_MONTH_YEAR, (3, 2, 1)), (_MONTH_DAY_YEAR, (3, 1, 2))):
        for match in pattern.finditer(query):
            if not free(match):
                continue
            year, month, day = (match.group(i) for i in order)
            if span := _day(int(year), MONTHS[month.lower()[:3]], int(day)):
                spans.append(span)
                taken.append(match.span())
    for match in _MONTH_YEAR.finditer(query):
        if free(match):
            year, month = int(match.group(2)), MONTHS[match.group(1).lower()[:3]]
            start = datetime(year, month, 1, tzinfo=UTC)
            spans.append(Span(start, start + timedelta(days=monthrange(year, month)[1])))
            taken.append(match.span())
    if not spans:
        for match in _YEAR.finditer(query):
            year = int(match.group(1))
            spans.append(Span(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)))
    return spans


_ASKS_WHEN = re.compile(r"\bwhen\b|\bwhat (?:day|date|time|year|month)\b|\bhow long ago\b", re.I)


def asks_when(query: str) -> bool:
    """Whether the query asks when something happened."""
    return bool(_ASKS_WHEN.search(query))


# After these words a name is the one spoken to or about ("said it to Bob", "a gift for Ann"),
# not the one speaking; "according to Ann" is the exception: it names who said it.
_SPOKEN_TO = frozenset("about at by for from into like of on than to toward towards with".split())
_NAME_WORD = re.compile(r"[A-Za-z0-9]+(?:['’]s\b)?")


def named_authors(query: str, authors: dict[str, int]) -> list[int]:
    """Ids of the authors the query names as the ones who said it.

    One name is taken as it is. Of several, a name written as the one spoken to or about
    ("What did Jon say to Gina", "Gina's store") is left out, so "What does Gina think of
    Jon's plan?" points to Gina's memories; names joined by "and" ("Jon and Gina both") stay
    together; "according to Gina" names Gina alone. If every name is left out, all are kept.
    """
    words = [w.lower() for w in _NAME_WORD.findall(query)]
    bare = [_possessor(w) for w in words]  # "gina's" -> "gina"
    named_at: dict[int, int] = {}  # word position -> author id
    for name, author_id in authors.items():
        parts = set(tokens(name, stem=False))
        for i, word in enumerate(bare):
            if word in parts:
                named_at[i] = author_id
    named = sorted(set(named_at.values()))
    if len(named) < 2:
        return named
    cited = {a for i, a in named_at.items() if words[max(i - 2, 0) : i] == ["according", "to"]}
    if cited:
        return sorted(cited)
    speaking = {a for i, a in named_at.items() if _speaks(words, bare, i, named_at)}
    return sorted(speaking) or named


def _possessor(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word


def _speaks(words: list[str], bare: list[str], i: int, named_at: dict[int, int]) -> bool:
    before = words[i - 1] if i else ""
    if before in _SPOKEN_TO:
        return False
    joined = before == "and" and (i - 2) in named_at  # "Tim and John's favourite player"
    return joined or bare[i] == words[i]  # a lone possessive ("Jon's plan") is spoken about
