"""The keyword half of a hosted shortlist: Atlas Search (``$search``), BM25 from the index.

A large scope's keyword candidates come from an Atlas Search index on ``content`` (Lucene:
BM25 with the corpus statistics of the whole index, not of a shortlist), filtered inside the
index by tenant, project, ``active`` and the search's filters (``compound.filter`` clauses
score nothing). Its analyzer is built from the local tokenizer's own tables
(:mod:`capsule.core.text`), so both sides agree on which words match:

- the tokenizer is ``regexCaptureGroup`` with ``text._WORD`` (words, identifiers, dotted names);
- ``wordDelimiterGraph`` splits identifiers into their parts and keeps the identifier whole
  (``getUserById`` -> ``getuserbyid``, ``get``, ``user``, ``by``, ``id``);
- ``lowercase``; ``stopword`` with ``text.STOP_WORDS``; ``length`` >= 2 drops the ``s`` of
  ``Caroline's`` as the local tokenizer does;
- one ``regex`` per irregular verb (``text._IRREGULAR``: ``went`` -> ``go``);
- Snowball English (Porter2, as the ``snowballstemmer`` package the local side uses), with the
  local rule that words of three letters or fewer, and tokens holding a digit or a delimiter, are
  not stemmed: a ``regex`` marks them with a trailing ``_`` (no English suffix ends so), and one
  after the stemmer takes the mark off.

Known differences (tests/store/test_atlas_search.py pins them): Lucene does not split an
acronym from the word after it (``HTTPServer`` stays whole; locally ``http``, ``server``); a
camel-case identifier kept whole is stemmed (``handleRequests`` -> ``handlerequest``); no joined
``http_503`` status token and no ``destress`` for ``de-stress``; a lone digit (``5``) is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import text
from ..core.clock import to_epoch
from ..core.records import Filters, KeywordStats
from .mongo_docs import RECORD_PROJECTION
from .mongo_vector import post_filter

SEARCH_INDEX = "capsule_text"  # the Atlas Search index's default name
ANALYZER = "capsule_terms"
KEYWORD_LIMIT = 100  # best BM25 matches added to the shortlist
_MARK = "_"  # "do not stem": no Snowball English suffix ends with it
COUNT_KEY = "counted_term"  # marks the count documents after the matches (None: the scope's size)


def analyzer() -> dict[str, Any]:
    """The custom analyzer, from the local tokenizer's tables (so the two cannot drift apart)."""
    irregular: dict[str, list[str]] = {}
    for form, base in sorted(text._IRREGULAR.items()):
        irregular.setdefault(base, []).append(form)
    filters: list[dict[str, Any]] = [
        {
            "type": "wordDelimiterGraph",
            "delimiterOptions": {
                "generateWordParts": True,
                "generateNumberParts": True,
                "concatenateWords": False,
                "concatenateNumbers": False,
                "concatenateAll": False,
                "preserveOriginal": True,
                "splitOnCaseChange": True,
                "splitOnNumerics": True,
                "stemEnglishPossessive": False,
            },
        },
        {"type": "lowercase"},
        {"type": "stopword", "tokens": sorted(text.STOP_WORDS), "ignoreCase": True},
        {"type": "length", "min": 2, "max": 255},
        *(
            {"type": "regex", "pattern": f"^({'|'.join(forms)})$", "replacement": base, "matches": "all"}
            for base, forms in sorted(irregular.items())
        ),
        # text._stem: only words of letters, longer than three, are stemmed.
        {"type": "regex", "pattern": "^([a-z]{1,3}|.*[^a-z].*)$", "replacement": "$1" + _MARK, "matches": "all"},
        {"type": "snowballStemming", "stemmerName": "english"},
        {"type": "regex", "pattern": _MARK + "$", "replacement": "", "matches": "all"},
    ]
    return {
        "name": ANALYZER,
        "tokenizer": {"type": "regexCaptureGroup", "pattern": text._WORD.pattern, "group": 0},
        "tokenFilters": filters,
    }


def search_index_definition(*, name: str = SEARCH_INDEX) -> dict[str, Any]:
    """The Atlas Search index: ``content`` analyzed, every filter field as a filterable type
    (strings as ``token``, which ``equals``/``in`` need), nothing mapped dynamically."""
    return {
        "name": name,
        "type": "search",
        "definition": {
            "mappings": {
                "dynamic": False,
                "fields": {
                    "content": {"type": "string", "analyzer": ANALYZER, "searchAnalyzer": ANALYZER},
                    "tenant": {"type": "token"},
                    "project": {"type": "token"},
                    "active": {"type": "boolean"},
                    "occurred_at": {"type": "number"},
                    "meta": {
                        "type": "document",
                        "fields": {
                            "component": {"type": "token"},
                            "category": {"type": "token"},
                            "tags": {"type": "token"},
                        },
                    },
                },
            },
            "analyzers": [analyzer()],
        },
    }


def filter_clauses(tenant: str, projects: Sequence[str] | None, filters: Filters) -> list[dict[str, Any]]:
    """``compound.filter``: the same scope as :func:`capsule.store.mongo_vector.scope_filter`,
    in Atlas Search operators (exact matches on ``token`` fields; they add nothing to the score)."""
    clauses: list[dict[str, Any]] = [
        {"equals": {"path": "tenant", "value": tenant}},
        {"equals": {"path": "active", "value": True}},
    ]
    if projects is not None:
        clauses.append({"in": {"path": "project", "value": list(projects)}})
    if filters.component:
        clauses.append({"equals": {"path": "meta.component", "value": filters.component}})
    if filters.category:
        clauses.append({"equals": {"path": "meta.category", "value": filters.category}})
    clauses += [{"equals": {"path": "meta.tags", "value": tag}} for tag in filters.tags]
    occurred: dict[str, Any] = {}
    if filters.since:
        occurred["gte"] = to_epoch(filters.since)
    if filters.until:
        occurred["lt"] = to_epoch(filters.until)
    if occurred:
        clauses.append({"range": {"path": "occurred_at", **occurred}})
    return clauses


def keyword_pipeline(
    *,
    tenant: str,
    projects: Sequence[str] | None,
    filters: Filters,
    query: str,
    index: str = SEARCH_INDEX,
    limit: int = KEYWORD_LIMIT,
    collection: str = "memories",
) -> list[dict[str, Any]]:
    """The ``limit`` best BM25 matches of ``query`` in the scope, as documents with their score,
    then BM25's statistics over the scope (:func:`split_counts` takes them apart).

    A path prefix is a ``$match`` after ``$search`` (before the limit, so it never empties the
    top ``limit``): Atlas Search has no prefix operator on a ``token`` field that escapes as
    simply, and the candidates it reads are only the query's matches in the scope.
    """
    clauses = filter_clauses(tenant, projects, filters)
    stages: list[dict[str, Any]] = [
        {
            "$search": {
                "index": index,
                "compound": {"filter": clauses, "must": [{"text": {"path": "content", "query": query}}]},
            }
        }
    ]
    if filters.path_prefix:
        stages.append({"$match": post_filter(filters)})
    # An exclusion $project takes no $meta: the score is added first.
    stages += [{"$limit": limit}, {"$addFields": {"score": {"$meta": "searchScore"}}}, {"$project": RECORD_PROJECTION}]
    # The same round trip brings BM25's statistics over the scope: how many memories it holds and
    # how many hold each query term ($searchMeta counts), appended after the matches.
    for term, word in [*counted_words(query).items(), (None, None)]:
        operator: dict[str, Any] = {"filter": clauses}
        if word is not None:
            operator["must"] = [{"text": {"path": "content", "query": word}}]
        stages.append(
            {
                "$unionWith": {
                    "coll": collection,
                    "pipeline": [
                        {"$searchMeta": {"index": index, "compound": operator, "count": {"type": "total"}}},
                        {"$addFields": {COUNT_KEY: term}},
                    ],
                }
            }
        )
    return stages


def counted_words(query: str) -> dict[str, str]:
    """Each query term whose document frequency can be counted exactly, with the query word that
    gives it: Atlas analyzes a ``text`` query, so a count must ask for the word, not its stem
    (Snowball is not idempotent). A word of several terms (an identifier) is left out: a count of
    it would be of any of its terms; those terms keep the shortlist's own frequency."""
    out: dict[str, str] = {}
    for word in text._WORD.findall(query):
        found = text._word_tokens(word, True)
        if len(found) == 1:
            out.setdefault(found[0], word)
    return out


def split_counts(docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], KeywordStats | None]:
    """The matches, and the scope's statistics from the count documents after them (None when the
    scope's size is missing: the service then uses the shortlist's own statistics)."""
    matches, df, n = [], {}, None
    for doc in docs:
        if COUNT_KEY not in doc:
            matches.append(doc)
            continue
        total = int((doc.get("count") or {}).get("total", 0))
        if doc[COUNT_KEY] is None:
            n = total
        else:
            df[doc[COUNT_KEY]] = total
    return matches, (None if not n else KeywordStats(n=n, avgdl=None, df=df))
