"""A tenant's keyword postings table (:class:`capsule.search.tenantpostings.PostingsTable`) kept on
disk beside the index snapshots, so that a fresh process's first global searches map it
instead of sorting every project's postings again: 23M postings at 1M memories over 100
projects, 4.4 s of CPU on one of the two cores the first searches run on, and 0.28 GB held
(1 GB more while sorting). Mapped, a process holds only the pages of the terms it looked up.

A table is kept only when each of its places is an index holding a snapshot's postings as
that file has them (:meth:`capsule.search.indexpostings.IndexPostings.postings_mark`): its places are
then named by those files, which every process that loads the snapshots reads alike. An index
changed since, or loaded from a newer snapshot, names no place of the table, and is read from
its own postings, as with any table older than its indexes (:class:`~capsule.search.tenantpostings.TenantPostings`).
Files are written to fresh names and the table's pickle renamed over the last, so a reader
sees a whole table; one that cannot be read is ignored (the table is then sorted again).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import uuid
from pathlib import Path

import numpy as np

from . import terms
from .matrix import read_ahead
from .tenantpostings import PostingsTable

logger = logging.getLogger("capsule.search.snapshot")

FORMAT = 1
ARRAYS = ("terms", "offsets", "owner", "local", "counts")


class TenantTables:
    """The tables of one store's tenants, by tenant and embedding model, in ``folder``."""

    def __init__(self, folder: str | Path, store_identity: str) -> None:
        self.folder = Path(folder)
        self.identity = store_identity

    def _stem(self, tenant: str, model: str | None) -> str:
        name = "\x00".join([self.identity, tenant, str(model)])
        return f"{hashlib.sha256(name.encode()).hexdigest()[:40]}.tenant"

    def load(self, tenant: str, model: str | None) -> PostingsTable | None:
        """The tenant's kept table, mapped; None where there is none usable."""
        stem = self._stem(tenant, model)
        path = self.folder / f"{stem}.postings"
        try:
            with path.open("rb") as handle:
                state = pickle.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, KeyError) as exc:
            logger.warning("ignoring the unreadable postings table %s: %s", path, exc)
            return None
        if (
            not isinstance(state, dict)
            or state.get("format") != FORMAT
            or state.get("tokenizer") != terms.TOKENIZER
            or state.get("owner") != (self.identity, tenant, model)
        ):
            return None
        try:
            arrays = {name: _mapped(self.folder / state["files"][name]) for name in ARRAYS}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring the postings table %s: its arrays are unreadable: %s", path, exc)
            return None
        postings = int(arrays["offsets"][-1]) if arrays["offsets"].size else -1
        if arrays["offsets"].size != arrays["terms"].size + 1 or any(
            arrays[name].size != postings for name in ("owner", "local", "counts")
        ):
            logger.warning("ignoring the postings table %s: its arrays do not agree", path)
            return None
        return PostingsTable({mark: place for place, mark in enumerate(state["places"])}, **arrays)

    def save(self, tenant: str, model: str | None, table: PostingsTable) -> bool:
        """Keep ``table`` as the tenant's, where each of its places names a snapshot's
        postings (:meth:`PostingsTable.named_by_files`); True when written."""
        if not table.named_by_files():
            return False
        stem = self._stem(tenant, model)
        unique = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
        files = {name: f"{stem}.{unique}.{name}.npy" for name in ARRAYS}
        places = [mark for mark, _ in sorted(table.places.items(), key=lambda item: item[1])]
        state = {
            "format": FORMAT,
            "tokenizer": terms.TOKENIZER,
            "owner": (self.identity, tenant, model),
            "places": places,
            "files": files,
        }
        path = self.folder / f"{stem}.postings"
        temporary = path.with_name(f"{path.name}.{unique}.tmp")
        written = [self.folder / name for name in files.values()]
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            for name in ARRAYS:
                np.save(self.folder / files[name], np.asarray(getattr(table, name)))
            with temporary.open("wb") as handle:
                pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
            for done in (temporary, *written):
                os.chmod(done, 0o600)
            os.replace(temporary, path)
        except OSError as exc:  # a full or read-only disk costs only the next fresh process a sort
            logger.warning("could not write the postings table %s: %s", path, exc)
            for done in (temporary, *written):
                done.unlink(missing_ok=True)
            return False
        for old in self.folder.glob(f"{stem}.*.npy"):  # a process mapping one keeps reading it
            if old.name not in files.values():
                old.unlink(missing_ok=True)
        return True


def _mapped(path: Path) -> np.ndarray:
    """A plain array over the file's mapping (a memmap's every slice is another memmap object),
    its pages read into the OS's cache beside the searches but mapped only where a term is read."""
    array = np.load(path, mmap_mode="r")
    read_ahead(path)
    return np.asarray(array)
