"""Warm-index snapshots on local disk, so a fresh process need not rebuild a large index.

After a project's index is built from a full load (and holds at least ``min_rows``), it is
written to ``<data_dir>/index/``; the next process loads it and reads from the store only
what changed after the snapshot's version, exactly as a warm index does. A snapshot is named
by the store's identity (a random id kept in the database), the tenant, the project and the
embedding model, so one made for another database or model is never used. Files are written
to a temporary name and renamed, so readers never see half a file; one that cannot be read is
ignored (the index is then built from the store). The folder is private to the user (0700):
the files are pickles, trusted like the database beside them.

The large arrays (the float32 matrix, the sign bits, the postings) are ``.npy`` files beside
the pickle, mapped read-only by every process that loads the snapshot: the workers of one
server share one copy in the OS's cache (:mod:`capsule.search.matrix`), and rows each adds later go
to its own RAM. A matrix that was read from the store into a file of this folder is kept as
that file, not written again.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import pickle
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import quantized, terms
from .index import ProjectIndex
from .matrix import PREAD_FROM, SplitRows, map_npy, new_npy
from .tenanttables import TenantTables

logger = logging.getLogger("capsule.search.snapshot")
# 4: the records in a second pickle after the index's (read only where the process holds them whole);
# 3: matrix, codes by row and postings in mapped .npy files; 2: postings by term hash
FORMAT = 4
MAPPED = ("matrix", "row_codes", "codes")


class _CollectorPause:
    """Python's cycle collector held off while snapshots are read (by any thread), then put
    back as it was. Unpickling makes a tuple per row, and each collection the allocations set
    off walks every object already made: 100 snapshots of 10k rows took 6.4 s to read with it,
    1.4 s without. What is read holds no cycles."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers = 0
        self._was_on = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._readers == 0:
                self._was_on = gc.isenabled()
                gc.disable()
            self._readers += 1
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1
                if self._readers == 0 and self._was_on:
                    gc.enable()


gc_paused = _CollectorPause()


class Snapshots:
    def __init__(self, folder: str | Path, store_identity: str, *, min_rows: int = 20_000) -> None:
        self.folder = Path(folder)
        self.identity = store_identity
        self.min_rows = min_rows
        # Tenants' postings tables made of these snapshots' postings (global search), beside them.
        self.tables = TenantTables(self.folder, store_identity)

    def _path(self, index: ProjectIndex) -> Path:
        name = "\x00".join([self.identity, index.tenant, index.project, str(index.model_id)])
        return self.folder / f"{hashlib.sha256(name.encode()).hexdigest()[:40]}.snapshot"

    def load(self, index: ProjectIndex, whole_records: Callable[[int], bool] = lambda rows: True) -> bool:
        """Fill an empty index from its snapshot; False when there is none usable.

        ``whole_records(rows)``: whether the index's records are read whole (else it holds
        their ids and fetches the records of its hits from the store). A tenant of many
        projects would otherwise hold every memory's text in RAM: 1.1 GB at a million."""
        path = self._path(index)
        try:
            with path.open("rb") as handle, gc_paused():
                state = pickle.load(handle)
                if state.get("format") == FORMAT:
                    _read_records(state["index"], handle, whole_records)
        except FileNotFoundError:
            return False
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, KeyError) as exc:
            logger.warning("ignoring the unreadable index snapshot %s: %s", path, exc)
            return False
        if (
            state.get("format") != FORMAT
            or state.get("tokenizer") != terms.TOKENIZER
            or state.get("owner") != (self.identity, index.tenant, index.project, index.model_id)
        ):
            return False
        try:
            # Mapped, not read: a search touches only its candidates' rows, and rows added later
            # go to RAM after them (see ProjectIndex._reserve).
            arrays = state["index"]["arrays"]
            quant = (
                self._quant_prefix(state["files"]["matrix"]) if state["index"]["n"] >= quantized.QUANT_FROM else None
            )
            copied = quant is not None and quantized.files(quant)["codes"].exists()
            for name in MAPPED:  # a large float32 matrix is read a few rows a search: not whole
                arrays[name] = self._map(state, name, copied)
            state["index"]["postings"] = tuple(
                map_npy(self.folder / name, whole=True, map_ahead=False) for name in state["files"]["postings"]
            )
        except (OSError, ValueError, KeyError) as exc:
            logger.warning("ignoring the index snapshot %s: its arrays are unreadable: %s", path, exc)
            return False
        state["index"]["matrix_file"] = self.folder / state["files"]["matrix"]
        index.restore(state["index"])
        index.postings_file = (index.changes, state["files"]["postings"][0])
        # Only an index large enough for a copy has one (smaller ones skip two failed opens).
        kept = quantized.load(quant) if copied else None  # type: ignore[arg-type]  # copied: quant is its path
        if kept is not None and kept.n <= index.n:
            index.quant = kept  # made from the same matrix file, whose rows never change
        return True

    def _map(self, state: dict, name: str, copied: bool) -> np.ndarray:
        """One of a snapshot's :data:`MAPPED` files, mapped. A matrix with an int8 copy has a
        few dozen rows a search read (by system calls: none of it mapped, so it does not count
        in the process's memory); a small one is read into the OS's cache first, as a small
        matrix read through its mapping is (a global search reads a hundred of them)."""
        path = self.folder / state["files"][name]
        if name != "matrix":
            return map_npy(path, whole=True)
        if not copied:
            return map_npy(path)
        small = state["index"]["n"] * state["index"]["dim"] * 4 < PREAD_FROM
        return map_npy(path, pread_from=0, whole=small)

    def quant_path(self, index: ProjectIndex) -> Path | None:
        """Where a large index's int8 copy goes: beside the snapshot matrix its rows are read
        from (named after it, so it lives as long as that file), None when there is none."""
        held = index.matrix_file
        if held is None or Path(held).parent != self.folder:
            return None
        return self._quant_prefix(Path(held).name)

    def _quant_prefix(self, matrix_name: str) -> Path:
        return self.folder / f"{matrix_name.removesuffix('.npy')}.quant"

    def spill_path(self, index: ProjectIndex) -> Path:
        """Where a large index reads its matrix into from the store (capsule.search.matrix.Spill):
        named like a snapshot's matrix, so its snapshot keeps the file and a newer one drops it."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.folder / f"{self._path(index).stem}.{self._unique()}.matrix.npy"

    @staticmethod
    def _unique() -> str:
        return f"{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}"

    def save(self, index: ProjectIndex) -> bool:
        """Write the index if it is large enough to be worth it; True when written."""
        if index.active < self.min_rows:
            return False
        exported = index.export()
        records = exported["records"]
        # Whole records go in a second pickle, read only where the process holds them whole;
        # the first holds every row's id (all an index of ids holds: no second copy of them).
        exported["whole"] = sum(type(item) is tuple for item in records)
        if exported["whole"]:
            exported["records"] = index.records.ids()
        arrays = exported["arrays"]
        large = {name: arrays.pop(name) for name in MAPPED}
        postings = exported.pop("postings")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(index)
        unique = self._unique()
        files: dict[str, Any] = {name: f"{path.stem}.{unique}.{name}.npy" for name in MAPPED}
        kept = self._kept_matrix(index, path.stem)
        if kept is not None:
            files["matrix"] = kept
        files["postings"] = [f"{path.stem}.{unique}.postings{i}.npy" for i in range(len(postings))]
        written = [self.folder / name for name in files["postings"]]
        written += [self.folder / files[name] for name in MAPPED if name != "matrix" or kept is None]
        state = {
            "format": FORMAT,
            "tokenizer": terms.TOKENIZER,
            "owner": (self.identity, index.tenant, index.project, index.model_id),
            "index": exported,
            "files": files,
        }
        temporary = path.with_name(f"{path.name}.{unique}.tmp")
        try:
            for name in MAPPED:
                if name != "matrix" or kept is None:
                    _write_rows(self.folder / files[name], large[name], index.n if name != "codes" else None)
            for name, values in zip(files["postings"], postings):
                np.save(self.folder / name, values)
            with temporary.open("wb") as handle:
                pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
                pickle.dump(records if exported["whole"] else None, handle, protocol=pickle.HIGHEST_PROTOCOL)
            for done in (temporary, *written):
                os.chmod(done, 0o600)
            os.replace(temporary, path)  # readers see the old snapshot or the new one, whole
        except OSError as exc:  # a full or read-only disk costs only the next cold start
            logger.warning("could not write the index snapshot %s: %s", path, exc)
            temporary.unlink(missing_ok=True)
            for done in written:
                done.unlink(missing_ok=True)
            return False
        copy = quantized.files(self._quant_prefix(files["matrix"]))
        self._drop_old_files(
            path.stem, keep={*files["postings"], *(files[name] for name in MAPPED), *(f.name for f in copy.values())}
        )
        index.postings_file = (index.changes, files["postings"][0])  # what export() gave, merged
        try:
            index.adopt_files(
                map_npy(self.folder / files["matrix"]),
                map_npy(self.folder / files["row_codes"]),
                self.folder / files["matrix"],
            )
        except (OSError, ValueError) as exc:  # the index keeps its arrays in RAM
            logger.warning("could not map the snapshot just written %s: %s", path, exc)
        return True

    def _kept_matrix(self, index: ProjectIndex, stem: str) -> str | None:
        """The name of the file in this folder that already holds exactly the index's matrix."""
        held = index.matrix_file
        if held is None or Path(held).parent != self.folder or not Path(held).name.startswith(stem + "."):
            return None
        if isinstance(index.matrix, SplitRows) or len(index.matrix) != index.n or not Path(held).exists():
            return None
        return Path(held).name

    def _drop_old_files(self, stem: str, keep: set[str]) -> None:
        # A process still mapping an old file keeps reading it: unlinking frees it only after.
        # A matrix another process is reading from the store into goes too: it holds it open.
        for old in self.folder.glob(f"{stem}.*.npy"):
            if old.name not in keep:
                old.unlink(missing_ok=True)


def _read_records(state: dict, handle, whole_records: Callable[[int], bool]) -> None:
    """Read an index's whole records (the second pickle) where it has them and they fit,
    else leave it its ids (the first holds them); ``held``: how many rows are whole."""
    held = state["whole"]
    if held and whole_records(held):
        state["records"] = pickle.load(handle)
    else:
        held = 0
    state["held"] = held


def _write_rows(path: Path, values, n: int | None, block: int = 65536) -> None:
    """Save the first ``n`` rows (None: all) of an array, mapped or split, a block at a time."""
    n = len(values) if n is None else n
    out = new_npy(path, values.dtype, (n, *values.shape[1:]))
    for start in range(0, n, block):
        stop = min(n, start + block)
        out[start:stop] = values[start:stop]
    out.flush()
    del out
