"""Hand-built, dataset-agnostic features of one user turn: does it state the user's own facts?

Pure functions over text, no model and no vocabulary learned from data: each feature is a
share or a count of a pattern anyone would name when asked "is this person telling me
something about themselves, or asking me for something?" (first-person events in the past,
the people in their life, dates and amounts, asides such as "by the way", against questions,
requests, wishes and hedges). :mod:`.user_facts` weighs them with a small logistic model.
"""

from __future__ import annotations

import math
import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9_']+")

_SELF = r"(?:i|i've|i'd|i'm|we|we've|we're|my wife and i|my husband and i|my partner and i)"
_PAST = (
    r"(?:got|bought|purchased|moved|started|finished|completed|attended|visited|went|met|joined|adopted|"
    r"received|booked|ordered|sold|signed up|graduated|upgraded|downloaded|tried|picked up|set up|spent|"
    r"saved|ran|read|watched|took|had|made|won|lost|found|learned|redeemed|volunteered|participated|"
    r"switched|changed|named|planted|baked|cooked|painted|built|wrote|rode|walked|drove|flew|hiked|"
    r"travel(?:l)?ed|caught up|came back|got back|returned|covered|earned|paid|sent|gave|fixed|repaired|"
    r"serviced|cleaned|replaced|renewed|registered|enrolled|celebrated|hosted|organized|organised|"
    r"collaborated|led|launched|published|recorded|played|performed|did|used to|decided|inherited|"
    r"scored|finished|created|donated|raised|borrowed|lent|rented|installed|subscribed|cancel(?:l)?ed)"
)
EVENT = re.compile(
    rf"\b{_SELF} (?:just |recently |finally |also |actually |already |even |once |last \w+ )?"
    rf"{_PAST}\b"
)
HABIT = re.compile(
    rf"\b{_SELF} (?:have |'ve )?been (?:\w+ing|using|doing|getting|keeping|selling|playing|working|"
    r"living|taking|going|trying|practicing|practising)\b|\bi(?:'ve| have) (?:been|had|owned|used)\b|"
    r"\bi (?:usually|always|often|normally|typically|regularly|generally) \w+|"
    r"\bi (?:work|live|study|teach|volunteer|commute|own|have a|have an|have two|have three)\b"
)
ATTRIBUTE = re.compile(
    r"\bi(?:'m| am) (?:a|an|\d+|currently|now|still|originally|from|allergic|vegetarian|vegan|"
    r"married|single|engaged|pregnant|retired|based)\b|\bmy (?:\w+ ){0,3}(?:is|are|was|were)\b"
)
_PEOPLE = (
    r"(?:mom|mum|mother|dad|father|parents?|sister|brother|siblings?|wife|husband|partner|boyfriend|"
    r"girlfriend|fianc[ée]e?|son|daughter|kids?|children|baby|cousin|aunt|uncle|niece|nephew|grandma|"
    r"grandpa|grandmother|grandfather|grandparents|friend|friends|colleague|colleagues|coworker|"
    r"co-worker|boss|manager|team|neighbou?r|roommate|dog|cat|puppy|kitten|pet|in-laws?|"
    r"sister-in-law|brother-in-law)"
)
PEOPLE = re.compile(rf"\bmy (?:\w+ )?{_PEOPLE}\b")
THIRD_PERSON_EVENT = re.compile(
    rf"\bmy (?:\w+ )?{_PEOPLE}(?:,? [a-z]+,?)? (?:just |recently |finally |also |"
    rf"actually )?(?:{_PAST}|got \w+|is (?:now )?\w+ing|has|had)\b|"
    r"^\s*(?:she|he|they) (?:just |recently |actually )?" + _PAST + r"\b"
)
POSSESSION = re.compile(r"\bmy (?:new|old|current|first|own|recent|latest|favou?rite|usual)\b")
PREFERENCE = re.compile(
    r"\bi (?:really |also |usually |generally |much |do |absolutely )?(?:prefer|love|like|enjoy|hate|"
    r"dislike|can't stand|avoid|adore)\b|\bmy (?:favou?rite|preferred)\b|\bi'?d rather\b"
)
REACTION = re.compile(
    r"\bi (?:really |also )?(?:like|love) (?:the|that|this|these|those|your|how|it)\b|"
    r"\b(?:sounds|looks) (?:great|good|amazing|interesting|like)\b|\bthat's (?:a )?(?:great|really|so|very)\b"
)
WHEN = re.compile(
    r"\b(?:yesterday|today|last (?:week|weekend|month|year|night|summer|winter|spring|fall|\w+day)|"
    r"(?:a|one|two|three|four|five|few|couple of) (?:days?|weeks?|months?|years?) ago|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|january|february|march|april|may \d|june|july|"
    r"august|september|october|november|december|\d{1,2}(?:st|nd|rd|th)\b|this (?:week|month|year)|"
    r"since|for (?:\d+|a|the past|over) \w+)"
)
AMOUNT = re.compile(
    r"[$€£]\s?\d|\b\d+(?:[.,]\d+)?\s?(?:%|percent|miles?|km|hours?|minutes?|days?|weeks?|months?|"
    r"years?|times|pounds?|lbs?|kg|dollars?|people|followers|am|pm)\b|\b\d"
)
ASIDE = re.compile(
    r"\b(?:by the way|btw|speaking of|incidentally|fyi|for context|as a matter of fact|"
    r"actually|i should mention|i forgot to mention)\b"
)
QUESTION = re.compile(r"\?\s*$")
REQUEST = re.compile(
    r"^\s*(?:can|could|would|will|do|does|did|is|are|should|what|how|why|where|when|which|who|"
    r"any|tell me|give me|show me|help me|suggest|recommend|explain|please|i'?m (?:looking for|"
    r"trying to find)|i (?:need|want|would like|'d like) (?:help|some|a|you|to know|advice|tips|"
    r"ideas|suggestions|recommendations))\b"
)
WISH = re.compile(
    r"\b(?:i'm|i am|we're|we are) (?:thinking (?:of|about)|planning|considering|wondering|looking (?:for|"
    r"to|into)|trying to (?:decide|figure|find)|hoping|curious|interested in)\b|"
    r"\bi (?:want|need|would like|'d like|'d love|would love|might|may|will|'ll) \w+"
)
HEDGE = re.compile(r"\b(?:not sure|don't know|do not know|no idea|i think|maybe|might|perhaps|i guess|i wonder)\b")
THANKS = re.compile(
    r"^\s*(?:thanks?|thank you|great|awesome|perfect|ok(?:ay)?|sounds good|that's (?:great|helpful|"
    r"really helpful|a great)|i appreciate)\b"
)
YOU = re.compile(r"\byou(?:r|'re|'ll|'ve)?\b")
PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")

NAMES = (
    "bias",
    "event",
    "habit",
    "attribute",
    "people",
    "third_person",
    "possession",
    "preference",
    "reaction",
    "when",
    "amount",
    "aside",
    "proper",
    "fact_share",
    "question_share",
    "request_share",
    "wish_share",
    "hedge_share",
    "thanks_first",
    "you_share",
    "log_words",
    "only_asks",
)


def _share(pattern: re.Pattern[str], parts: list[str], *, match: bool = False) -> float:
    hits = sum(1 for p in parts if (pattern.match(p) if match else pattern.search(p)))
    return hits / len(parts)


def _capped(pattern: re.Pattern[str], text: str, cap: int = 3) -> float:
    return min(cap, len(pattern.findall(text))) / cap


_FACT = re.compile("|".join(p.pattern for p in (EVENT, HABIT, ATTRIBUTE, THIRD_PERSON_EVENT)))


def _preference(sentence: str) -> bool:
    """A liking that is no reaction: "I like the idea of ..." answers a suggestion."""
    return PREFERENCE.search(sentence) is not None and REACTION.search(sentence) is None


def states_fact(sentence: str) -> bool:
    """Does a (lower-cased) sentence state something about the user, rather than ask?"""
    if QUESTION.search(sentence) or REQUEST.match(sentence):
        return False
    return _FACT.search(sentence) is not None or _preference(sentence)


def split(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()] or [""]


def user_turn_features(text: str) -> list[float]:
    """The features named in :data:`NAMES`, in that order, each within [0, 1]. The patterns
    are written in lower case and run on the lower-cased text (faster than IGNORECASE)."""
    low = text.lower()
    parts = split(low)
    asks = sum(1 for s in parts if QUESTION.search(s) or REQUEST.match(s))
    return [
        1.0,
        _capped(EVENT, low),
        _capped(HABIT, low),
        _capped(ATTRIBUTE, low),
        _capped(PEOPLE, low),
        _capped(THIRD_PERSON_EVENT, low),
        _capped(POSSESSION, low),
        min(3, sum(1 for s in parts if _preference(s))) / 3,
        _capped(REACTION, low),
        _capped(WHEN, low),
        _capped(AMOUNT, low),
        _capped(ASIDE, low, 1),
        _capped(PROPER, text, 5),
        sum(1 for s in parts if states_fact(s)) / len(parts),
        _share(QUESTION, parts),
        _share(REQUEST, parts, match=True),
        _share(WISH, parts),
        _share(HEDGE, parts),
        1.0 if THANKS.match(parts[0]) else 0.0,
        _share(YOU, parts),
        min(1.0, math.log1p(len(_WORD.findall(low))) / math.log1p(300)),
        1.0 if asks == len(parts) else 0.0,
    ]
