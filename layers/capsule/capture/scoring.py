"""Which conversation events are worth remembering, scored without a language model.

Pure functions over text. An event is split into sentences; each sentence is scored by
cues for the kinds of memory an agent needs later (a decision and its reason, a fix that
worked and its cause, an error and its cause, a dead end, a convention, a preference or a
fact about the user), and marked down for what is not (questions, requests, chatter,
advice to the user, status lines). The best sentences of an event, with their neighbours
that carry the same subject, make its candidate text; the candidate's score is the best
sentence's. Every score says why (``reason``), so a person reviewing the queue can judge it.

What a user says about their own life (events, people, dates, preferences) is weighed as a
whole turn by a small learned model instead of the ``fact`` cue (:mod:`.user_facts`): such
turns mix a fact with requests and questions, which the per-sentence cues mark down, and
many first-person sentences state nothing worth keeping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PROPOSE_AT = 0.5  # a sentence scoring below this is not proposed at all
MAX_CANDIDATE_CHARS = 1200

_I = r"(?:i|i'm|i've|i'd|i'll|we|we're|we've|we'll|we'd|our|my|me)"


@dataclass(frozen=True)
class Cue:
    kind: str  # the proposed class (meta.type)
    weight: float
    pattern: re.Pattern[str]
    why: str


def _cue(kind: str, weight: float, why: str, *patterns: str) -> Cue:
    return Cue(kind, weight, re.compile("|".join(patterns), re.IGNORECASE), why)


CUES: tuple[Cue, ...] = (
    _cue(
        "decision",
        0.75,
        "states a decision",
        r"\b(?:we|i) (?:decided|agreed|chose|opted|settled on|went with)\b",
        r"^\W*decision:",
        r"\bdecided\b",
        r"\b(?:the|our|my) decision (?:is|was) to\b",
        r"\blet'?s (?:go with|use|keep|switch|stick with|drop)\b",
        r"\b(?:we|i)(?:'ll| will| are going to|'re going to) (?:go with|use|keep|switch to|stick with|drop)\b",
        r"\bgoing (?:forward|with)\b",
        r"\bfrom now on\b",
        r"\b(?:instead of|rather than)\b.*\bbecause\b",
        r"\bswitch(?:ed|ing)? (?:from \S+ )?to\b.*\b(?:because|since|so that)\b",
        r"\b(?:we|i)(?:'re| are| am|'m)? going to switch\b",
        r"\b(?:we|let's|then) go with\b",
        r"\b(?:leave|keep) the \w+(?: \w+)? (?:alive |on |off |as it is )?.*\buntil\b",
        r"\bso \S+ stays\b",
    ),
    _cue(
        "fix",
        0.8,
        "says what fixed a problem",
        r"\b(?:fixed|fixes|solved|resolved) (?:it|the|this|by)\b",
        r"\bthe fix (?:is|was)\b",
        r"\b(?:works|passes|passing|green) now\b",
        r"\bthat (?:worked|did it|fixed it)\b",
        r"\bworkaround\b",
        r"\bfixed by\b",
        r"\b(?:is|are|was|were|got|now) (?:now )?fixed\b",
        r"\bthe (?:only )?(?:change|breaking change|difference|trick) (?:was|is)\b",
        r"\bwhich is why\b",
    ),
    _cue(
        "error",
        0.75,
        "names the cause of an error",
        r"\broot cause\b",
        r"\bthe (?:problem|issue|bug|error|failure|crash) (?:is|was)\b",
        r"\b(?:caused by|because of|due to)\b",
        r"\bturn(?:s|ed) out (?:that|to be|the|it|we|our|there)\b",
        r"^\W*turns out\b",
        r"\bfail(?:s|ed|ing)? (?:because|when|since)\b",
        r"\bthe reason (?:is|was)\b",
        r"\b(?:happens|happened|occurs|broke|breaks|crashed|crashes|hangs|hung|stopped|returns|returned) because\b",
    ),
    _cue(
        "dead_end",
        0.7,
        "records an approach that did not work",
        r"\b(?:didn't|doesn't|did not|does not|won't|will not) (?:work|help|fix)\b",
        r"\bdead end\b",
        r"\bno luck\b",
        r"\bruled out\b",
        r"\bdon't (?:bother|try)\b",
        r"\b(?:tried|trying) .{3,80}\bbut\b",
        r"\b(?:did not|didn't|does not|doesn't) change\b",
        r"\bmade no difference\b",
        r"\bgave nothing\b",
    ),
    _cue(
        "convention",
        0.7,
        "states a convention or rule",
        r"\b(?:always|never) (?:use|run|call|put|commit|push|deploy|import|set|name|write)\b",
        r"\b(?:our convention|the convention is|convention:|rule of thumb|our policy|we require)\b",
        r"(?<!'ll )(?<!will )(?<!also )(?<!definitely )(?<!i )\bmake sure (?:to|you)\b",
        r"\bmust (?:be|not|always|never|use|run)\b",
        r"\bneeds? .{1,40} (?:or newer|or later|at least)\b",
        r"\b(?:don't|do not|never) (?:run|deploy|push|point|use|commit)\b.{0,60}\b(?:there|on|in|to)\b",
    ),
    _cue(
        "preference",
        0.75,
        "states a preference",
        r"\b(?:i|we) (?:really |also |usually |generally |much |do )?(?:prefer|love|like|enjoy|hate|dislike|"
        r"can't stand|avoid|am allergic|'m allergic|am vegetarian|'m vegetarian|am vegan|'m vegan)\b",
        r"\bmy (?:favou?rite|preferred)\b",
        r"\bplease (?:don't|do not|always|never)\b",
        r"\bi'?d rather\b",
        r"\bi (?:don't|do not) (?:like|want|eat|drink)\b",
        r"\bplease (?:keep|use|stop|avoid|don't|do not|always|never|prefer)\b",
    ),
    _cue(
        "note",
        0.8,
        "asks that it be remembered",
        r"(?<!i )(?<!i've )(?<!i )\bremember that\b",
        r"\bnote for later\b",
        r"\bfor the record\b",
        r"\bkeep in mind that\b",
        r"\bnote to self\b",
        r"\bfyi\b",
    ),
    _cue(
        "fact",
        0.7,
        "a fact about the user",
        r"\bmy (?:\w+ ){0,3}(?:is|are|was|were|name|named|called)\b",
        rf"\b{_I} (?:just |recently |finally |also |actually |already )?"
        r"(?:got|bought|purchased|moved|started|finished|completed|attended|visited|went|met|joined|adopted|"
        r"received|booked|ordered|sold|signed up|graduated|upgraded|downloaded|tried|picked up|set up|"
        r"spent|saved|ran|read|watched|took|had|made|won|lost|found|learned|redeemed|volunteered|"
        r"participated|completed|switched|changed|named|planted|baked|cooked|painted|built|wrote)\b",
        r"\bi (?:work|live|study|teach|am a|'m a|am an|'m an|have a|have been|'ve been|used to)\b",
        r"\bi(?:'m| am) (?:currently|now|still) \w+ing\b",
    ),
)

_REACTION = re.compile(
    r"\b(?:like|love|enjoy) (?:the (?:idea|sound|suggestions?|look|list|tips|options)|your (?:idea|"
    r"suggestions?|tips)|these|those|this (?:idea|list|suggestion))\b|\bi'm loving\b",
    re.IGNORECASE,
)
_REMINDER = re.compile(r"\b(?:keep in mind|remember)\b", re.IGNORECASE)
_PREFERS = next(c.pattern for c in CUES if c.kind == "preference")

# What marks a sentence down, and by how much.
_QUESTION = re.compile(r"\?\s*$")
_REQUEST = re.compile(
    r"^\s*(?:can|could|would|will|do|does|did|is|are|should|what|how|why|where|when|which|who|"
    r"any|tell me|give me|show me|help me|please (?:help|tell|give|show|explain|recommend|suggest))\b",
    re.IGNORECASE,
)
_CHATTER = re.compile(
    r"^\s*(?:ok(?:ay)?|thanks?|thank you|great|cool|nice|sure|sounds good|perfect|awesome|got it|"
    r"yes|yep|no|nope|hmm+|lgtm|done|right|alright|wow|oh|ah|good)\b[\s\W]*$",
    re.IGNORECASE,
)
_STATUS = re.compile(
    r"^\s*(?:let me|let's (?:see|check|look|run|try)|i'll (?:now |first |just )?(?:check|look|run|try|"
    r"start|open|read|search|take a look|see)|now (?:i'll|let me|running)|running|checking|looking|"
    r"reading|searching|opening|next,? i'll)\b",
    re.IGNORECASE,
)
_ADVICE = re.compile(
    r"\b(?:you (?:can|could|should|might|may|will|need to|want to)|here are|here's|here is|consider|"
    r"make sure|remember to|keep in mind|don't forget|be sure to|your|you're|you've|you'll|"
    r"i (?:recommend|suggest)|some (?:tips|ideas|options)|it's (?:a good idea|important)|"
    r"feel free|i hope|good luck|happy to help|keep me (?:updated|posted|informed))\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:if this|whether|not sure|don't know|do not know|no idea|i think|maybe|might be|"
    r"could be|yet\b|we'll see|let's see)",
    re.IGNORECASE,
)
_PLAN = re.compile(
    r"\b(?:i'm|i am|we're|we are) (?:thinking (?:of|about)|planning|considering|wondering|looking for|"
    r"trying to decide|hoping|curious|interested in)\b|\bi (?:want|need|would like|'d like|'d love|would love) (?:to|some|a|more)\b",
    re.IGNORECASE,
)
_CODE = re.compile(
    r"`[^`]+`|\b[\w/.-]+\.(?:py|js|ts|json|toml|yaml|yml|sql|md|go|rs|sh|cfg|ini)\b|\b\w+_\w+\b|"
    r"\b\w+\(\)|\b(?:test|tests|pytest|ci|sql|api|http|git|npm|pip|docker|lambda|index|schema|query)\b",
    re.IGNORECASE,
)
LONG_ANSWER_WORDS = 150
_SPECIFIC = re.compile(
    r"\d|`[^`]+`|\b[\w.-]+\.(?:py|js|ts|json|toml|yaml|yml|sql|md|go|rs|sh)\b|"
    r"(?<!^)(?<![.!?:*\"']\s)(?<![.!?:*\"'])\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b|\b\w+_\w+\b|\b\w+\(\)"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(])|\n+")
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z0-9_']+")


@dataclass(frozen=True)
class Event:
    role: str  # user | assistant | tool | system
    text: str
    tool_results: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scored:
    """One proposed memory: its text, score (0-1), why, proposed class and tags."""

    text: str
    score: float
    reason: str
    kind: str
    tags: tuple[str, ...] = field(default_factory=tuple)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _penalties(sentence: str, role: str) -> tuple[float, list[str]]:
    minus, why = 0.0, []
    words = len(_WORD.findall(sentence))
    checks = (
        (_QUESTION.search(sentence) is not None, 0.45, "a question"),
        (_REQUEST.match(sentence) is not None, 0.35, "a request"),
        (_CHATTER.match(sentence) is not None, 0.6, "chatter"),
        (_STATUS.match(sentence) is not None, 0.35, "a status line"),
        (_ADVICE.search(sentence) is not None and role != "user", 0.3, "advice to the user"),
        (_PLAN.search(sentence) is not None, 0.2, "a plan or a wish, not a fact"),
        (_HEDGE.search(sentence) is not None, 0.3, "hedged"),
        (words < 5, 0.3, "too short to stand alone"),
        (words > 80, 0.2, "too long to be one fact"),
    )
    for hit, amount, name in checks:
        if hit:
            minus += amount
            why.append(name)
    return minus, why


def score_sentence(sentence: str, role: str) -> tuple[float, str, str]:
    """(score, kind, reason) of one sentence; score 0 when no cue matched."""
    best: Cue | None = None
    for cue in CUES:
        if cue.pattern.search(sentence) and (best is None or cue.weight > best.weight):
            best = cue
    if best is None:
        return 0.0, "note", "no cue for a decision, fix, cause, preference or fact"
    score, notes = best.weight, [best.why]
    if best.kind == "preference" and _REACTION.search(sentence):
        score -= 0.4  # "I like the idea of ..." answers a suggestion; it is no lasting preference
        notes.append("a reaction to a suggestion")
    if best.kind in ("fact", "preference") and role == "assistant":
        score -= 0.3  # what the assistant says about "my" or "I" is rarely about the user
        notes.append("said by the assistant")
    if best.kind == "note" and role == "assistant" and _REMINDER.search(sentence):
        score -= 0.3  # "keep in mind that ..." from the assistant reminds the user; it is no request to remember
        notes.append("a reminder to the user")
    if best.kind in ("fix", "error", "decision", "dead_end") and role == "user":
        score -= 0.05
    if _SPECIFIC.search(sentence):
        score += 0.1
        notes.append("specific (names, numbers or code)")
    if re.search(r"\b(?:because|since|so that|which means|the reason)\b", sentence, re.IGNORECASE):
        score += 0.1
        notes.append("gives the reason")
    minus, why = _penalties(sentence, role)
    score -= minus
    if why:
        notes.append("but " + ", ".join(why))
    return max(0.0, min(1.0, score)), best.kind, "; ".join(notes)


def _tags(text: str, kind: str) -> tuple[str, ...]:
    found = {kind.replace("_", "-")}
    for name, pattern in _TAG_WORDS:
        if pattern.search(text):
            found.add(name)
    return tuple(sorted(found))


_TAG_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("tests", r"\b(?:tests?|pytest|ci)\b"),
        ("database", r"\b(?:sql|sqlite|postgres|mongo\w*|database|migration)\b"),
        ("deploy", r"\b(?:deploy\w*|release|docker|kubernetes|lambda|cdk)\b"),
        ("api", r"\b(?:api|endpoint|http|route)\b"),
        ("build", r"\b(?:build|compile\w*|dependency|dependencies|pip|npm|package)\b"),
        ("performance", r"\b(?:slow|fast|latency|performance|memory leak|timeout)\b"),
        ("security", r"\b(?:auth\w*|token|secret|password|permission|credential)\b"),
    )
)


# A list under one of these headers (a DIGEST block, a summary) says what kind each item is.
_HEADER = re.compile(r"^\s*(?:#+\s*)?([A-Za-z][A-Za-z _-]{2,30}):?\s*$")
_SECTIONS = {
    "decisions": "decision",
    "decision": "decision",
    "contracts": "convention",
    "conventions": "convention",
    "rules": "convention",
    "fixes": "fix",
    "fixed": "fix",
    "root cause": "error",
    "causes": "error",
    "lessons": "fix",
    "learned": "fix",
    "pitfalls": "dead_end",
    "dead ends": "dead_end",
    "preferences": "preference",
}
_SECTION_WEIGHT = 0.8


def _sectioned(text: str) -> tuple[list[tuple[str, str]], str]:
    """The list items under known headers, as (kind, item), and the text without them."""
    items: list[tuple[str, str]] = []
    rest: list[str] = []
    kind: str | None = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            kind = _SECTIONS.get(header.group(1).strip().lower())
            if kind is None:
                rest.append(line)
            continue
        if kind is not None and _LIST_LINE.match(line):
            items.append((kind, _LIST_LINE.sub("", line, count=1).strip()))
            continue
        if line.strip():
            kind = None if not _LIST_LINE.match(line) else kind
        rest.append(line)
    return items, "\n".join(rest)


def _item_score(kind: str, item: str, role: str) -> tuple[str, float, str, str]:
    score, _, reason = score_sentence(item, role)
    base = _SECTION_WEIGHT + (0.1 if _SPECIFIC.search(item) else 0.0)
    return item, min(1.0, max(score, base)), kind, f"listed under '{kind}' in a summary"


def _user_fact(text: str) -> list[tuple[str, float, str, str]]:
    """What a user says about themselves, scored by the learned model (:mod:`.user_facts`) over
    the whole turn; its text is the turn's fact-bearing sentences (not its questions)."""
    # Imported on the first user turn: compiling the model's patterns costs tens of milliseconds,
    # which a cold start that scores no user turn (a Lambda, a hook) should not pay.
    from .features import states_fact
    from .user_facts import fact_score

    every = sentences(text)
    facts = [s for s in every if states_fact(s.lower())] or [
        s for s in every if not _QUESTION.search(s) and not _REQUEST.match(s) and not _PLAN.search(s)
    ]
    if not facts:
        return []
    kind = "preference" if any(_PREFERS.search(s) for s in facts) else "fact"
    score = fact_score(text)
    return [(" ".join(facts), score, kind, f"states the user's own facts (model score {score:.2f})")]


def score_event(event: Event, *, propose_at: float = PROPOSE_AT) -> Scored | None:
    """The candidate an event yields, or None when nothing in it scores ``propose_at`` or more
    (lower than :data:`PROPOSE_AT` only to draw a precision/recall curve below it)."""
    if event.role == "system":
        return None
    items, text = _sectioned(event.text)
    if event.role == "assistant" and len(_LIST_LINE.findall(text)) >= 3:
        # A long answer of listed advice: keep only its sentences outside the lists.
        text = "\n".join(line for line in text.splitlines() if not _LIST_LINE.match(line))
    parts = sentences(text)
    long_answer = event.role == "assistant" and len(_WORD.findall(text)) > LONG_ANSWER_WORDS
    if long_answer:  # filtered before scoring: scoring every sentence of a long answer is most of the cost
        parts = [s for s in parts if _CODE.search(s)]
    results = [(s, *score_sentence(s, event.role)) for s in parts]
    if long_answer:
        # A long answer is mostly explanation: only what it says about the code is a memory.
        results = [r for r in results if r[2] in ("fix", "error", "decision", "dead_end")]
    results += [_item_score(kind, item, event.role) for kind, item in items if len(_WORD.findall(item)) >= 3]
    for tool_text in event.tool_results:  # what a tool printed counts for less than what was said
        tool_items, tool_rest = _sectioned(tool_text)
        results += [
            (s, score * 0.8, kind, reason + "; from a tool result")
            for s in sentences(tool_rest)[:20]
            for score, kind, reason in [score_sentence(s, "tool")]
        ]
        results += [_item_score(kind, item, "tool") for kind, item in tool_items if len(_WORD.findall(item)) >= 3]
    if event.role == "user":
        results = [r for r in results if r[2] != "fact"] + _user_fact(event.text)
    results = [(said, round(score, 3), kind, why) for said, score, kind, why in results]  # 0.75 - 0.05 - 0.2 is 0.5
    kept = [r for r in results if r[1] >= propose_at]
    if not kept:
        return None
    best = max(kept, key=lambda r: r[1])
    chosen = [r[0] for r in kept]
    body = " ".join(dict.fromkeys(s for text in chosen for s in sentences(text)))  # each sentence once
    if len(body) > MAX_CANDIDATE_CHARS:
        body = best[0][:MAX_CANDIDATE_CHARS]
    return Scored(text=body, score=best[1], reason=best[3], kind=best[2], tags=_tags(body, best[2]))
