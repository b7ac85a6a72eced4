"""Plain data for solutions, patterns and their links, between the service and the stores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np


@dataclass(slots=True)
class SolutionRecord:
    id: str
    tenant: str
    title: str
    category: str
    body: dict[str, Any]  # the validated fixpack, without counts and times
    created_at: datetime
    updated_at: datetime
    success: int = 0
    failure: int = 0
    embeddings: np.ndarray | None = None  # one unit row per signature, float32
    model: str | None = None
    last_applied_at: datetime | None = None  # when an outcome was last recorded
    verified_on: datetime | None = None  # when it last worked


@dataclass(slots=True)
class ApplicationRecord:
    id: str
    tenant: str
    solution_id: str
    success: bool
    at: datetime
    project: str | None = None
    error: str | None = None
    context: str | None = None


@dataclass(slots=True)
class PatternRecord:
    tenant: str
    tag: str
    category: str
    terms: list[str]
    occurrences: int
    projects: list[str]
    examples: list[str]
    description: str
    created_at: datetime
    updated_at: datetime
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    embedding: np.ndarray | None = None
    model: str | None = None


@dataclass(slots=True)
class LinkRecord:
    """How often a target helped with a pattern. kind: "solution" or "memory" (a fix memory)."""

    tenant: str
    tag: str
    category: str
    kind: str
    target_id: str
    success: int = 0
    failure: int = 0
    last_at: datetime | None = None
