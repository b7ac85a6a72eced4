"""Reading the times a query speaks of, resolved against the search's "now" (``as_of``).

``windows(query, as_of)`` turns what a query says about time into soft windows over when the
memories happened: absolute dates ("8 May 2023", "2023-05-08", "May 2023", "2023"), dates
without a year ("in February", "March 3rd", "2/8") taken as the latest such date up to
``as_of``, relative ones ("yesterday", "a week ago", "two months ago", "last month", "the past
three weeks", "this year", "recently", "last spring", "last Thursday", "the day before
yesterday", "the week before March 3") counted back from it. A :class:`Window` is a boost, not a
filter: 1 inside, fading to 0 over ``slack`` outside, since people round what they remember
("a month ago" is rarely 30 days). Numeric dates read as month/day and day/month both, where
both exist: nothing here is fitted to one way of writing dates.

Pure functions over the text and the given ``as_of``; a few regexes, microseconds per query.
Calendar days are those of ``as_of``'s own time zone.
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from .query import MONTH_PATTERN as _M
from .query import MONTHS, named_dates

DAY = timedelta(days=1)
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple": 2,
    "few": 3,
    "several": 4,
}
_FUZZY = {"couple", "few", "several"}  # "a few weeks": the window widens by one unit each side
_N = (
    r"(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|several)"
)
_UNIT = r"(day|week|month|year)s?"
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month (northern)

_AGO = re.compile(rf"\b{_N}\s+{_UNIT}\s+ago\b", re.I)
_PAST = re.compile(rf"\b(?:past|last|previous)\s+{_N}\s+{_UNIT}\b", re.I)
_PAST_ONE = re.compile(r"\b(?:the\s+)?past\s+(day|week|weekend|month|year)\b", re.I)
_LAST = re.compile(r"\b(last|this|previous)\s+(week|weekend|month|year)\b", re.I)
_YESTERDAY = re.compile(r"\b(?:the\s+day\s+before\s+)?yesterday\b|\btoday\b|\btonight\b", re.I)
_RECENT = re.compile(r"\b(?:recently|lately|most\s+recent(?:ly)?)\b", re.I)
_WEEKDAY = re.compile(r"\b(last|this|past|on)?\s*(" + "|".join(_WEEKDAYS) + r")s?\b", re.I)
_SEASON = re.compile(r"\b(last|this|past|in(?:\s+the)?)?\s*(spring|summer|fall|autumn|winter)\b", re.I)
_MONTH_DAY = re.compile(rf"\b{_M}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*,?\s*\d{{4}})", re.I)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M}\b(?!\s*,?\s*\d{{4}})", re.I)
_MONTH = re.compile(
    rf"\b(?:in|during|of|since|by|from|to|until|and|early|late|mid)\s+(?:the\s+month\s+of\s+)?{_M}\b"
    rf"(?!\s*,?\s*\d{{4}})",
    re.I,
)
_NUMERIC = re.compile(r"(?<![\d/.-])(\d{1,2})/(\d{1,2})(?![\d/]|\.\d)")
_BEFORE = re.compile(r"\bthe\s+(day|week|month)\s+(before|after)\b(?!\s+yesterday)", re.I)


@dataclass(frozen=True, slots=True)
class Window:
    """When something the query names happened: [start, end), fading to 0 over ``slack`` outside."""

    start: datetime
    end: datetime
    slack: timedelta = timedelta(0)


def windows(query: str, as_of: datetime) -> list[Window]:
    """The windows of time ``query`` speaks of, seen from ``as_of`` (most precise first)."""
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=UTC)
    found = [Window(s.start, s.end) for s in named_dates(query)]  # written with a year: exact
    taken = " ".join(query.split())
    for reader in (_relative, _calendar, _partial):
        found += reader(taken, as_of)
    return _shifted(taken, as_of, found)


def closeness(when: np.ndarray, found: list[Window]) -> np.ndarray:
    """For epoch seconds ``when``: 1 inside any window, falling linearly to 0 over its slack."""
    best = np.zeros(np.shape(when), dtype=np.float64)
    for w in found:
        start, end = w.start.timestamp(), w.end.timestamp()
        outside = np.maximum(start - when, 0.0) + np.maximum(when - end, 0.0)
        slack = w.slack.total_seconds()
        near = (outside <= 0) if slack <= 0 else np.maximum(1.0 - outside / slack, 0.0)
        best = np.maximum(best, near)
    return best


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _count(word: str) -> tuple[int, bool]:
    word = re.sub(r"^a\s+|\s+of$", "", word.lower())
    return (int(word), False) if word.isdigit() else (_NUMBERS[word], word in _FUZZY)


def _unit(unit: str) -> timedelta:
    return {"day": DAY, "week": 7 * DAY, "weekend": 7 * DAY, "month": 30 * DAY, "year": 365 * DAY}[unit.lower()]


def _relative(query: str, as_of: datetime) -> list[Window]:
    """Counted back from ``as_of``: "N units ago", "the past N units", "yesterday", "recently"."""
    today = _midnight(as_of)
    out = []
    for match in _AGO.finditer(query):
        n, fuzzy = _count(match.group(1))
        unit = _unit(match.group(2))
        centre = today - n * unit if unit == DAY else as_of - n * unit
        half = DAY if unit == DAY else unit / 2
        spread = unit if fuzzy else timedelta(0)
        start = centre if unit == DAY else centre - half
        out.append(Window(start - spread, start + (DAY if unit == DAY else 2 * half) + spread, half))
    for match in _PAST.finditer(query):
        n, _ = _count(match.group(1))
        span = n * _unit(match.group(2))
        out.append(Window(as_of - span, today + DAY, span / 4))
    for match in _PAST_ONE.finditer(query):
        span = _unit(match.group(1))
        out.append(Window(as_of - span, today + DAY, span / 4))
    for match in _YESTERDAY.finditer(query):
        back = 2 if match.group(0).lower().startswith("the") else 1 if match.group(0).lower() == "yesterday" else 0
        out.append(Window(today - back * DAY, today - (back - 1) * DAY, DAY))
    if _RECENT.search(query):
        out.append(Window(as_of - 14 * DAY, as_of + DAY, 14 * DAY))
    return out


def _calendar(query: str, as_of: datetime) -> list[Window]:
    """Calendar units named from ``as_of``: "last week", "this month", weekdays, seasons."""
    today = _midnight(as_of)
    out = []
    for match in _LAST.finditer(query):
        which, unit = match.group(1).lower(), match.group(2).lower()
        back = 0 if which == "this" else 1
        out.append(_calendar_unit(today, unit, back))
    for match in _WEEKDAY.finditer(query):
        day = _WEEKDAYS.index(match.group(2).lower())
        back = (today.weekday() - day) % 7  # the latest such day up to today ...
        if back == 0 and (match.group(1) or "").lower() in ("last", "past"):
            back = 7  # ... but "last Monday", said on a Monday, is a week ago
        start = today - back * DAY
        out.append(Window(start, start + DAY, DAY))
    for match in _SEASON.finditer(query):
        out.append(_season(today, _SEASONS[match.group(2).lower()], (match.group(1) or "").lower()))
    return out


def _calendar_unit(today: datetime, unit: str, back: int) -> Window:
    if unit in ("week", "weekend"):
        monday = today - today.weekday() * DAY - back * 7 * DAY
        start = monday + 5 * DAY if unit == "weekend" else monday
        end = monday + 7 * DAY
        return Window(start, end, 2 * DAY)
    if unit == "month":
        year, month = today.year, today.month - back
        if month < 1:
            year, month = year - 1, month + 12
        start = today.replace(year=year, month=month, day=1)
        return Window(start, start + monthrange(year, month)[1] * DAY, 7 * DAY)
    start = today.replace(year=today.year - back, month=1, day=1)
    return Window(start, start.replace(year=start.year + 1), 30 * DAY)


def _season(today: datetime, first: int, which: str) -> Window:
    """The latest such season begun by ``today`` ("last": the one before it, when today is in it)."""
    year = today.year if today.month >= first else today.year - 1
    if first == 12 and today.month <= 2:
        year = today.year - 1
    start = today.replace(year=year, month=first, day=1)
    end_year, end_month = (year + 1, (first + 3) % 12 or 12) if first + 3 > 12 else (year, first + 3)
    end = start.replace(year=end_year, month=end_month)
    if which == "last" and start <= today < end:
        start, end = start.replace(year=year - 1), end.replace(year=end.year - 1)
    return Window(start, end, 14 * DAY)


def _partial(query: str, as_of: datetime) -> list[Window]:
    """Dates without a year, taken as the latest such date up to ``as_of``."""
    today = _midnight(as_of)
    out, days = [], []
    for pattern, order in ((_MONTH_DAY, (1, 2)), (_DAY_MONTH, (2, 1))):
        for match in pattern.finditer(query):
            month, day = match.group(order[0]), match.group(order[1])
            out += _latest_day(today, MONTHS[month.lower()[:3]], int(day))
            days.append(match.span())
    for match in _NUMERIC.finditer(query):
        a, b = int(match.group(1)), int(match.group(2))
        if (a, b) == (24, 7):  # "24/7" is all the time, not a date
            continue
        out += _latest_day(today, a, b) + ([] if a == b else _latest_day(today, b, a))
    for match in _MONTH.finditer(query):
        if any(a < match.end() and match.start() < b for a, b in days):  # "the 3rd of March": a day
            continue
        month = MONTHS[match.group(1).lower()[:3]]
        year = today.year if month <= today.month else today.year - 1
        start = today.replace(year=year, month=month, day=1)
        out.append(Window(start, start + monthrange(year, month)[1] * DAY, 7 * DAY))
    return out


def _latest_day(today: datetime, month: int, day: int) -> list[Window]:
    if not 1 <= month <= 12 or not 1 <= day <= monthrange(2000, month)[1]:
        return []
    for year in range(today.year, today.year - 9, -1):  # 29 February: the last leap year
        try:
            start = today.replace(year=year, month=month, day=day)
        except ValueError:
            continue
        if start <= today:
            return [Window(start, start + DAY, DAY)]
    return []


def _shifted(query: str, as_of: datetime, found: list[Window]) -> list[Window]:
    """ "The day (week, month) before/after <a date>": each window also moved by that much."""
    moves = [(_unit(m.group(1)), -1 if m.group(2).lower() == "before" else 1) for m in _BEFORE.finditer(query)]
    if not moves or not found:
        return found
    out = list(found)
    for unit, sign in moves:
        out += [Window(w.start + sign * unit, w.end + sign * unit, max(w.slack, DAY)) for w in found]
    return out


__all__ = ["Window", "windows", "closeness"]
