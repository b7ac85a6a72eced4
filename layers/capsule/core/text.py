"""Tokenising text for keyword search: prose and code alike.

``tokens("Fix ECONNREFUSED in getUserById (HTTP 503)")`` keeps identifiers and error
codes whole (``econnrefused``, ``getuserbyid``, ``503``) and adds their parts
(``get``, ``user``, ``by``, ``id``), so a query finds code by either spelling.
Dotted names (``redis.railway.internal``) are kept whole and split too; a status
written as an upper-case word and a number (``HTTP 503``, ``SQLSTATE 40001``) also gives
one joined token (``http_503``). Plain words are stemmed (Snowball English) and common
stop words dropped.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import snowballstemmer

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-/:][A-Za-z0-9_]+)*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STATUS = re.compile(r"\b([A-Z][A-Z0-9]{1,15})[ \t]+(\d{3,6})\b")
_STEMMER = snowballstemmer.stemmer("english")

STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her his how i if
    in into is it its me my no not of on or our she so than that the their them then there these they this
    to was we were what when where which who whom why will with would you your ll ve re""".split()
)


# Bumped whenever the tokens of a text change: postings saved with another version are stale.
TOKENIZER_VERSION = 2

# Irregular English verb forms to their base form, so "went" meets "go" and "bought" meets "buy"
# (a stemmer only strips regular endings). A few forms are other words too (left, found, saw);
# in what people tell an agent the verb is the likelier reading. Forms of be/do/have are left
# alone: they are stop words.
_IRREGULAR = {
    form: base
    for base, forms in {
        "begin": "began begun",
        "break": "broke broken",
        "bring": "brought",
        "build": "built",
        "buy": "bought",
        "catch": "caught",
        "choose": "chose chosen",
        "come": "came",
        "draw": "drew drawn",
        "drink": "drank drunk",
        "drive": "drove driven",
        "eat": "ate eaten",
        "fall": "fell fallen",
        "feel": "felt",
        "fight": "fought",
        "find": "found",
        "fly": "flew flown",
        "forget": "forgot forgotten",
        "get": "got gotten",
        "give": "gave given",
        "go": "went gone",
        "grow": "grew grown",
        "hear": "heard",
        "hold": "held",
        "keep": "kept",
        "know": "knew known",
        "learn": "learnt",
        "leave": "left",
        "lose": "lost",
        "make": "made",
        "meet": "met",
        "pay": "paid",
        "ride": "rode ridden",
        "run": "ran",
        "say": "said",
        "see": "saw seen",
        "sell": "sold",
        "send": "sent",
        "sing": "sang sung",
        "sit": "sat",
        "sleep": "slept",
        "speak": "spoke spoken",
        "spend": "spent",
        "stand": "stood",
        "swim": "swam swum",
        "take": "took taken",
        "teach": "taught",
        "tell": "told",
        "think": "thought",
        "throw": "threw thrown",
        "wear": "wore worn",
        "win": "won",
        "write": "wrote written",
    }.items()
    for form in forms.split()
}


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    word = _IRREGULAR.get(word, word)
    return _STEMMER.stemWord(word) if word.isalpha() and len(word) > 3 else word


def _parts(word: str) -> list[str]:
    pieces = re.split(r"[._\-/:]+", word)
    out: list[str] = []
    for piece in pieces:
        out.extend(m.group(0) for m in _PART.finditer(piece))
    return out


@lru_cache(maxsize=262144)
def _word_tokens(word: str, stem: bool) -> tuple[str, ...]:
    """The tokens one word gives (cached: words repeat far more than they vary)."""
    lower = word.lower()
    parts = _parts(word)
    if len(parts) <= 1:
        if lower in STOP_WORDS or (len(lower) == 1 and lower.isalpha()):
            return ()  # stop words, and the "s" of "Caroline's" or the "t" of "don't"
        return ((_stem(lower) if stem else lower),)
    out = [lower]  # the identifier as written
    if "-" in word and all(p.isalpha() for p in parts):
        out.append(_stem(lower.replace("-", "")) if stem else lower.replace("-", ""))  # de-stress: destress
    for part in parts:
        part = part.lower()
        if part not in STOP_WORDS and len(part) > 1:
            out.append(_stem(part) if stem else part)
    return tuple(out)


def tokens(text: str, *, stem: bool = True) -> list[str]:
    """The keyword tokens of ``text``, lowercased, in order."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_word_tokens(word, stem))
    out.extend(f"{m.group(1).lower()}_{m.group(2)}" for m in _STATUS.finditer(text))
    return out


_ASIDE = re.compile(r"\[[^\[\]]*\]")


@lru_cache(maxsize=65536)
def ends_with_question(text: str) -> bool:
    """Whether ``text`` ends by asking: its last mark, bracketed asides (``[image: ...]``, a
    leading ``[date]``) set aside, is a question mark."""
    return _ASIDE.sub(" ", text).rstrip().endswith("?")


_WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|recently|since|soon|weekend|"
    r"this (?:week|month|year|morning|evening)|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"january|february|march|april|june|july|august|september|october|november|december|19\d\d|20\d\d)\b",
    re.I,
)


@lru_cache(maxsize=65536)
def says_when(text: str) -> bool:
    """Whether ``text`` itself says when something happened (``yesterday``, ``last week``, a weekday,
    a month, a year), bracketed asides such as a leading ``[date]`` stamp set aside."""
    return bool(_WHEN.search(_ASIDE.sub(" ", text)))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def estimate_tokens(text: str) -> int:
    """A model-free token count close to a WordPiece count for English and code."""
    return len(re.findall(r"\w+|[^\w\s]", text))
