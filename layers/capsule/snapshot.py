"""Warm-index snapshots on local disk, so a fresh process need not rebuild a large index.

After a project's index is built from a full load (and holds at least ``min_rows``), it is
written to ``<data_dir>/index/``; the next process loads it and reads from the store only
what changed after the snapshot's version, exactly as a warm index does. A snapshot is named
by the store's identity (a random id kept in the database), the tenant, the project and the
embedding model, so one made for another database or model is never used. Files are written
to a temporary name and renamed, so readers never see half a file; one that cannot be read is
ignored (the index is then built from the store). The folder is private to the user (0700):
the files are pickles, trusted like the database beside them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import threading
import uuid
from pathlib import Path

import numpy as np

from . import terms
from .index import ProjectIndex

logger = logging.getLogger("capsule.snapshot")
FORMAT = 2  # 2: postings by term hash (capsule.terms); records may be ids only


class Snapshots:
    def __init__(self, folder: str | Path, store_identity: str, *, min_rows: int = 20_000) -> None:
        self.folder = Path(folder)
        self.identity = store_identity
        self.min_rows = min_rows

    def _path(self, index: ProjectIndex) -> Path:
        name = "\x00".join([self.identity, index.tenant, index.project, str(index.model_id)])
        return self.folder / f"{hashlib.sha256(name.encode()).hexdigest()[:40]}.snapshot"

    def load(self, index: ProjectIndex) -> bool:
        """Fill an empty index from its snapshot; False when there is none usable."""
        path = self._path(index)
        try:
            with path.open("rb") as handle:
                state = pickle.load(handle)
        except FileNotFoundError:
            return False
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
            logger.warning("ignoring the unreadable index snapshot %s: %s", path, exc)
            return False
        if state.get("format") != FORMAT or state.get("tokenizer") != terms.TOKENIZER or state.get("owner") != (
                self.identity, index.tenant, index.project, index.model_id):
            return False
        try:
            # The matrix is mapped, not read: a search touches only its candidates' rows, and
            # the first row added copies it into memory (see ProjectIndex._reserve).
            state["index"]["arrays"]["matrix"] = np.load(self.folder / state["matrix"], mmap_mode="r")
        except (OSError, ValueError) as exc:
            logger.warning("ignoring the index snapshot %s: its matrix is unreadable: %s", path, exc)
            return False
        index.restore(state["index"])
        return True

    def save(self, index: ProjectIndex) -> bool:
        """Write the index if it is large enough to be worth it; True when written."""
        if index.active < self.min_rows:
            return False
        exported = index.export()
        matrix = exported["arrays"].pop("matrix")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(index)
        unique = f"{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}"
        matrix_name = f"{path.stem}.{unique}.npy"
        state = {"format": FORMAT, "tokenizer": terms.TOKENIZER,
                 "owner": (self.identity, index.tenant, index.project, index.model_id),
                 "index": exported, "matrix": matrix_name}
        temporary = path.with_name(f"{path.name}.{unique}.tmp")
        try:
            np.save(self.folder / matrix_name, np.ascontiguousarray(matrix))
            with temporary.open("wb") as handle:
                pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
            for written in (temporary, self.folder / matrix_name):
                os.chmod(written, 0o600)
            os.replace(temporary, path)  # readers see the old snapshot or the new one, whole
        except OSError as exc:  # a full or read-only disk costs only the next cold start
            logger.warning("could not write the index snapshot %s: %s", path, exc)
            temporary.unlink(missing_ok=True)
            (self.folder / matrix_name).unlink(missing_ok=True)
            return False
        self._drop_old_matrices(path.stem, keep=matrix_name)
        return True

    def _drop_old_matrices(self, stem: str, keep: str) -> None:
        # A process still mapping an old file keeps reading it: unlinking frees it only after.
        for old in self.folder.glob(f"{stem}.*.npy"):
            if old.name != keep:
                old.unlink(missing_ok=True)
