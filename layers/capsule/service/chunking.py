"""Splitting a long text into memories: 500-800 tokens each, with overlap.

Cuts fall at the largest boundary that fits: a top-level definition in code, then a
paragraph, then a line, then a sentence, and only as a last resort inside a sentence.
Code keeps each function whole when it fits in one chunk. Consecutive chunks share
about ``overlap`` tokens of whole lines or sentences, so a fact cut in two is still
found in one piece. Pure functions: text in, strings out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core import text as _text

CODE_SUFFIXES = frozenset(
    ".py .js .ts .tsx .jsx .go .rs .java .kt .c .h .cc .cpp .hpp .cs .rb .php .swift .scala .sh .sql".split()
)
# A line that starts a top-level definition in common languages.
_DEF = re.compile(
    r"^(?:@|def |async def |class |function |export |func |fn |pub |impl |struct |enum |interface |type |"
    r"public |private |protected |static |const |let |var |module |package )"
)


# Each ASCII character as its class in ``\w+|[^\w\s]`` (core.text.estimate_tokens): "a" a word
# character, " " a space, "." any other.
_ASCII_CLASS = (
    bytes(ord("a" if re.fullmatch(r"\w", chr(c)) else " " if re.fullmatch(r"\s", chr(c)) else ".") for c in range(128))
    + b"." * 128
)


def estimate_tokens(text: str) -> int:
    """:func:`capsule.core.text.estimate_tokens`, the same count: an ASCII text is counted without
    making its matches (issue 32: a 10-chunk ingest weighs its pieces some 70 times; 1.9 -> 0.15 ms
    for 35 kB). Each character mapped to its class, each "other" is a token and each run of word
    characters one more."""
    if not text.isascii():
        return _text.estimate_tokens(text)
    classes = text.encode("ascii").translate(_ASCII_CLASS)
    return classes.count(b".") + classes.count(b" a") + classes.count(b".a") + classes.startswith(b"a")


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    min_tokens: int = 500
    max_tokens: int = 800
    overlap_tokens: int = 80


def looks_like_code(text: str, path: str | None = None) -> bool:
    if path and any(path.lower().endswith(suffix) for suffix in CODE_SUFFIXES):
        return True
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    defs = sum(1 for line in lines if _DEF.match(line))
    symbols = sum(1 for line in lines if line.rstrip().endswith(("{", "}", ";", ":", ")")))
    return defs >= 2 and symbols / len(lines) > 0.3


def _code_blocks(text: str) -> list[str]:
    """Top-level definitions, each with the comments and decorators just above it."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if _DEF.match(line) and not line.startswith("@") and blocks[-1]:
            current = blocks[-1]
            keep = len(current)
            while keep and current[keep - 1].startswith(("@", "#", "//")):
                keep -= 1
            blocks[-1], moved = current[:keep], current[keep:]
            blocks.append(moved)
        blocks[-1].append(line)
    return ["".join(b) for b in blocks if "".join(b).strip()]


def _cut(text: str, boundary: re.Pattern[str]) -> list[str]:
    """Cut after each boundary match; the separators stay, so joining loses nothing."""
    pieces, start = [], 0
    for match in boundary.finditer(text):
        if match.end() > start:
            pieces.append(text[start : match.end()])
            start = match.end()
    pieces.append(text[start:])
    return [p for p in pieces if p]


_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_LINE = re.compile(r"\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORDS = re.compile(r"(?:\S+\s+){200}")  # 200 words: always under the chunk limit


def _split(text: str, level: int) -> list[str]:
    """Split at one boundary level: 0 paragraphs, 1 lines, 2 sentences, 3 word runs."""
    return _cut(text, (_PARAGRAPH, _LINE, _SENTENCE, _WORDS)[level])


def _pieces(text: str, max_tokens: int, level: int) -> list[str]:
    """Break ``text`` into pieces no larger than ``max_tokens``, at the coarsest boundary."""
    if estimate_tokens(text) <= max_tokens or level > 3:
        return [text]
    out: list[str] = []
    for piece in _split(text, level):
        out.extend(_pieces(piece, max_tokens, level + 1))
    return out


def _tail(pieces: list[str], budget: int, *, finer: bool = True) -> list[str]:
    """The end of a chunk that fits in the overlap budget: whole pieces, else trailing
    sentences or lines of the last piece."""
    tail: list[str] = []
    used = 0
    for piece in reversed(pieces):
        size = estimate_tokens(piece)
        if used + size > budget:
            break
        tail.insert(0, piece)
        used += size
    if tail or not pieces or not finer:
        return tail
    for level in (2, 1):  # sentences, then lines, of the last piece
        parts = _split(pieces[-1], level)
        if len(parts) > 1:
            return _tail(parts, budget) if estimate_tokens(parts[-1]) <= budget else []
    return []


def _join(pieces: list[str]) -> str:
    return "".join(pieces).strip()


def chunk_text(text: str, *, path: str | None = None, policy: ChunkPolicy = ChunkPolicy()) -> list[str]:
    """Split ``text`` into chunks of at most ``policy.max_tokens`` (estimated) tokens."""
    text = text.replace("\r\n", "\n")
    if estimate_tokens(text) <= policy.max_tokens:
        return [text.strip()] if text.strip() else []
    is_code = looks_like_code(text, path)
    units = _code_blocks(text) if is_code else _split(text, 0)
    pieces: list[str] = []
    for unit in units:
        pieces.extend(_pieces(unit, policy.max_tokens - policy.overlap_tokens, 1))

    chunks: list[list[str]] = []
    current: list[str] = []
    carried = 0  # pieces at the head of ``current`` repeated from the chunk before
    for piece in pieces:
        if current and _size(current) + estimate_tokens(piece) > policy.max_tokens:
            chunks.append(current)
            # Code overlaps by whole definitions only: a chunk never opens mid-function.
            current = _tail(current, policy.overlap_tokens, finer=not is_code)
            carried = len(current)
        current.append(piece)
    if len(current) > carried:
        fresh = current[carried:]
        if chunks and _size(fresh) < policy.min_tokens // 4 and _size(chunks[-1] + fresh) <= policy.max_tokens:
            chunks[-1].extend(fresh)  # a small remainder joins the chunk before
        else:
            chunks.append(current)
    return [_join(c) for c in chunks if _join(c)]


def _size(pieces: list[str]) -> int:
    return sum(estimate_tokens(p) for p in pieces)
