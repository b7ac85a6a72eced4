"""Atlas Search (``$search``) for the fake cluster (scripts/atlas_fake.py), per Atlas's documented semantics.

- **Analysis**: a custom analyzer from the index definition, run filter by filter as Lucene runs
  it: the ``regexCaptureGroup`` tokenizer; ``wordDelimiterGraph`` with Lucene's break rules
  (lower->UPPER and letter<->digit split, UPPER->lower does not: ``HTTPServer`` stays whole;
  the original kept beside its parts only when it was split); ``lowercase``; ``stopword``;
  ``length``; ``regex`` (Java's ``replaceAll``/``replaceFirst``, ``$1`` groups); and
  ``snowballStemming`` (english: Porter2, the same algorithm as the ``snowballstemmer`` package).
- **Scoring**: Lucene's BM25Similarity as Atlas's score details document it, ``idf * freq /
  (freq + k1 * (1 - b + b * dl / avgdl))`` with ``idf = log(1 + (N - n + 0.5) / (n + 0.5))``,
  k1 1.2, b 0.75, where N, n and avgdl are the statistics of the whole index (every tenant's
  documents: a ``compound.filter`` narrows the matches, never the statistics). ``dl`` counts
  positions (a kept original and its first part share one). Lucene stores ``dl`` in one byte (lossy
  past ~40 tokens); the fake keeps it exact. A ``text`` query's terms are SHOULD clauses: the
  score is their sum, each analyzed query token counted (a repeated word twice).
- **Filters**: ``equals``, ``in`` and ``range`` in ``compound.filter``, exact, on paths the index
  maps with a type they accept (a string needs ``token``); anything else is refused, where Atlas
  would answer nothing or fail, so a filter the index cannot serve shows in tests.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np
import snowballstemmer
from pymongo.errors import OperationFailure

K1, B = 1.2, 0.75


def _java_replacement(replacement: str) -> str:
    return re.sub(r"\$(\d)", r"\\\1", replacement.replace("\\", "\\\\"))


def _lucene_parts(token: str) -> list[str]:
    """WordDelimiterIterator with splitOnCaseChange and splitOnNumerics: non-alphanumerics
    delimit; lower->UPPER and letter<->digit break a word; UPPER->lower does not."""
    parts, current, last = [], "", None
    for ch in token:
        kind = "U" if "A" <= ch <= "Z" else "L" if "a" <= ch <= "z" else "D" if ch.isdigit() else None
        if kind is None:
            if current:
                parts.append(current)
            current, last = "", None
            continue
        if current and kind != last and not (last == "U" and kind == "L"):
            parts.append(current)
            current = ""
        current += ch
        last = kind
    if current:
        parts.append(current)
    return parts


class Analyzer:
    """A custom analyzer definition, executed: ``analyze(text) -> (tokens, positions)``."""

    def __init__(self, definition: dict[str, Any]) -> None:
        tokenizer = definition["tokenizer"]
        if tokenizer["type"] != "regexCaptureGroup":
            raise OperationFailure(f"the fake does not run the {tokenizer['type']} tokenizer")
        self._pattern, self._group = re.compile(tokenizer["pattern"]), tokenizer["group"]
        self._steps: list[Callable[[list[tuple[str, bool]]], list[tuple[str, bool]]]] = []
        self._words: dict[str, tuple[tuple[str, ...], int]] = {}
        for f in definition.get("tokenFilters", []):
            self._steps.append(self._step(f))

    def _step(self, f: dict[str, Any]) -> Callable[[list[tuple[str, bool]]], list[tuple[str, bool]]]:
        kind = f["type"]
        if kind == "wordDelimiterGraph":
            keep = f.get("delimiterOptions", {}).get("preserveOriginal", False)

            def split(tokens):
                out = []
                for token, _ in tokens:
                    parts = _lucene_parts(token)
                    if parts == [token]:
                        out.append((token, False))
                        continue
                    if keep:  # the original first; its first part at the same position (increment 0)
                        out.append((token, False))
                    out.extend((p, keep and i == 0) for i, p in enumerate(parts))
                return out

            return split
        if kind == "lowercase":
            return lambda tokens: [(t.lower(), o) for t, o in tokens]
        if kind == "stopword":
            words = {w.lower() for w in f["tokens"]} if f.get("ignoreCase", True) else set(f["tokens"])
            fold = f.get("ignoreCase", True)
            return lambda tokens: [(t, o) for t, o in tokens if (t.lower() if fold else t) not in words]
        if kind == "length":
            low, high = f.get("min", 0), f.get("max", 255)
            return lambda tokens: [(t, o) for t, o in tokens if low <= len(t) <= high]
        if kind == "regex":
            pattern, repl = re.compile(f["pattern"]), _java_replacement(f["replacement"])
            count = 1 if f.get("matches") == "first" else 0
            return lambda tokens: [(pattern.sub(repl, t, count=count), o) for t, o in tokens]
        if kind == "snowballStemming":
            stemmer = snowballstemmer.stemmer(f["stemmerName"])
            return lambda tokens: [(stemmer.stemWord(t), o) for t, o in tokens]
        raise OperationFailure(f"the fake does not run the {kind} token filter")

    def analyze(self, text: str) -> tuple[list[str], int]:
        """The terms of ``text`` and its length in positions (a kept original shares one with its first part)."""
        terms: list[str] = []
        positions = 0
        for m in self._pattern.finditer(text):
            found, length = self._word(m.group(self._group))
            terms.extend(found)
            positions += length
        return terms, positions

    def _word(self, word: str) -> tuple[tuple[str, ...], int]:
        # Every filter acts on one token at a time: a word's terms are always the same.
        known = self._words.get(word)
        if known is not None:
            return known
        tokens = [(word, False)]
        for step in self._steps:
            tokens = step(tokens)
        tokens = [(t, o) for t, o in tokens if t]
        known = self._words[word] = (
            tuple(t for t, _ in tokens),
            sum(1 for _, overlapping in tokens if not overlapping),
        )
        return known


@lru_cache(maxsize=8)
def analyzer_for(definition_json: str) -> Analyzer:
    return Analyzer(json.loads(definition_json))


class Postings:
    """One analyzed field over every document of the index: term -> (rows, freqs), lengths.
    Held as sorted numpy arrays (a million memories' postings fit in a few hundred MB)."""

    def __init__(self, texts: Iterable[str], analyze: Callable[[str], tuple[list[str], int]]) -> None:
        ids: dict[str, int] = {}
        term_ids, rows, lengths = array("q"), array("q"), array("d")
        for row, content in enumerate(texts):
            tokens, length = analyze(content)
            lengths.append(length)
            for token in tokens:
                term_ids.append(ids.setdefault(token, len(ids)))
                rows.append(row)
        self.lengths = np.frombuffer(lengths, dtype=np.float64).copy()
        self.n = self.lengths.size
        self.avgdl = float(self.lengths.mean()) if self.n else 1.0
        keys, freqs = np.unique(
            np.frombuffer(term_ids, np.int64) * max(self.n, 1) + np.frombuffer(rows, np.int64), return_counts=True
        )
        self._terms, self._rows, self._freqs = keys // max(self.n, 1), keys % max(self.n, 1), freqs.astype(np.float64)
        self._ids = ids

    def term_rows(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        at = self._ids.get(term)
        if at is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        lo, hi = np.searchsorted(self._terms, [at, at + 1])
        return self._rows[lo:hi], self._freqs[lo:hi]


def bm25(postings: Postings, terms: list[str]) -> np.ndarray:
    """Each document's score for the SHOULD clauses ``terms`` (0 where none matches)."""
    score = np.zeros(postings.n, dtype=np.float64)
    for term in terms:
        rows, freq = postings.term_rows(term)
        if not rows.size:
            continue
        idf = math.log(1 + (postings.n - rows.size + 0.5) / (rows.size + 0.5))
        score[rows] += idf * freq / (freq + K1 * (1 - B + B * postings.lengths[rows] / postings.avgdl))
    return score


def mapped_fields(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Dotted path -> field mapping, through ``document`` fields."""
    out: dict[str, dict[str, Any]] = {}

    def walk(fields: dict[str, Any], prefix: str) -> None:
        for name, spec in fields.items():
            if spec.get("type") == "document":
                walk(spec.get("fields", {}), f"{prefix}{name}.")
            else:
                out[prefix + name] = spec

    walk(definition.get("mappings", {}).get("fields", {}), "")
    return out


def filter_query(clauses: list[dict[str, Any]], fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``compound.filter`` as one MongoDB query (the fake's matcher), each clause checked
    against the index mapping as Atlas checks it."""
    out: list[dict[str, Any]] = []
    for clause in clauses:
        ((operator, spec),) = clause.items()
        path = spec["path"]
        kind = fields.get(path, {}).get("type")
        if kind is None:
            raise OperationFailure(f"{operator}: path '{path}' is not indexed")
        if operator in ("equals", "in"):
            values = spec["value"] if operator == "in" else [spec["value"]]
            for value in values:
                needed = (
                    "boolean" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else "token"
                )
                if kind != needed:
                    raise OperationFailure(f"{operator}: path '{path}' needs to be indexed as {needed}")
            out.append({path: {"$in": list(values)}} if operator == "in" else {path: spec["value"]})
        elif operator == "range":
            if kind != "number":
                raise OperationFailure(f"range: path '{path}' needs to be indexed as number")
            bounds = {f"${k}": v for k, v in spec.items() if k in ("gt", "gte", "lt", "lte")}
            out.append({path: bounds})
        else:
            raise OperationFailure(f"the fake does not evaluate the {operator} operator")
    return {"$and": out} if out else {}
