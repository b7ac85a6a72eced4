"""A snapshot's files that every search reads a part of are read into the OS's cache when
they are mapped (capsule.search.matrix.read_ahead): every byte advised, a window at a time, a large
file in the background; a large float32 matrix, read a few rows a search, is not."""

from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from capsule.search import matrix, snapshot

from .test_index_snapshot import fill


@pytest.fixture
def advised(monkeypatch):
    calls: dict[str, list[tuple[int, int]]] = {}
    real = os.posix_fadvise
    names: dict[int, str] = {}
    opened = os.open

    def remember(path, flags, *args):
        fd = opened(path, flags, *args)
        names[fd] = os.fspath(path)
        return fd

    def advise(fd, offset, length, advice):
        assert advice == os.POSIX_FADV_WILLNEED
        calls.setdefault(names.get(fd, "?"), []).append((offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(matrix.os, "open", remember)
    monkeypatch.setattr(matrix.os, "posix_fadvise", advise)
    return calls


def covered(spans: list[tuple[int, int]]) -> int:
    end = 0
    for offset, length in sorted(spans):
        assert offset <= end  # no gap
        end = max(end, offset + length)
    return end


def wait_for_readers() -> None:
    for thread in threading.enumerate():
        if thread.name == "capsule-read-ahead":
            thread.join(timeout=30)


def test_every_byte_of_a_file_is_advised_and_a_large_one_in_the_background(tmp_path, advised, monkeypatch):
    monkeypatch.setattr(matrix, "READ_AHEAD_STEP", 4096)
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(b"x" * 4000)
    large.write_bytes(b"y" * (5 * 4096 + 17))
    matrix.read_ahead(small)
    assert [n for n in advised] == [str(small)]  # at once, in the caller's thread
    matrix.read_ahead(large)
    wait_for_readers()
    assert covered(advised[str(small)]) >= 4000
    assert covered(advised[str(large)]) >= 5 * 4096 + 17 and len(advised[str(large)]) == 6
    matrix.read_ahead(tmp_path / "gone.bin")  # a file replaced meanwhile: nothing, no error


def test_one_file_that_fails_does_not_stop_the_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix, "READ_AHEAD_STEP", 4096)
    large = tmp_path / "large.bin"
    large.write_bytes(b"z" * 3 * 4096)
    done = []

    def advise(path, size):
        if not done:
            done.append("failed")
            raise RuntimeError("an unexpected failure")
        done.append(path)

    monkeypatch.setattr(matrix, "_advise", advise)
    matrix.read_ahead(large)
    wait_for_readers()
    matrix.read_ahead(large)
    wait_for_readers()
    assert done == ["failed", large]


def test_a_file_read_a_few_rows_at_a_time_is_not_read_ahead(tmp_path, advised):
    for name in ("pread.npy", "whole.npy", "mapped.npy"):
        np.save(tmp_path / name, np.arange(1000, dtype=np.int64))
    assert matrix.map_npy(tmp_path / "pread.npy", pread_from=4096)[999] == 999  # rows read by pread
    assert matrix.map_npy(tmp_path / "whole.npy", pread_from=4096, whole=True)[999] == 999
    assert matrix.map_npy(tmp_path / "mapped.npy", pread_from=1 << 20)[999] == 999  # read through the mapping
    wait_for_readers()
    assert set(advised) == {str(tmp_path / "whole.npy"), str(tmp_path / "mapped.npy")}


def test_a_snapshot_load_reads_ahead_all_but_a_large_float32_matrix(make_service, advised, monkeypatch):
    first = make_service(index_snapshot_min=10)
    fill(first, 300)
    first.search("t", {"project": "p", "query": "redis timeout", "k": 5})
    first.settle()
    for pread_from, matrix_read in ((1 << 40, True), (1024, False)):
        monkeypatch.setattr(snapshot, "map_npy", partial(matrix.map_npy, pread_from=pread_from))
        advised.clear()
        again = make_service(index_snapshot_min=10)
        again.search("t", {"project": "p", "query": "redis timeout", "k": 5})
        wait_for_readers()
        read = {os.path.basename(name) for name in advised}
        assert any(name.endswith(".row_codes.npy") for name in read)
        assert any(name.endswith(".codes.npy") and ".row_codes" not in name for name in read)
        assert any(".postings" in name for name in read)
        assert any(name.endswith(".matrix.npy") for name in read) is matrix_read


def mapped_kb(path) -> int:
    """How much of ``path`` this process has mapped (its mappings' Rss in /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines(keepends=True):
        if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def kernel_populates() -> bool:
    # An advice the kernel does not know is refused before the (empty) range is looked at.
    return matrix._LIBC is not None and matrix._LIBC.madvise(None, 0, matrix.MADV_POPULATE_READ) == 0


@pytest.mark.skipif(
    not os.path.exists("/proc/self/smaps") or not kernel_populates(),
    reason="needs Linux 5.14 or later (MADV_POPULATE_READ)",
)
def test_a_file_read_through_its_mapping_is_mapped_by_the_reader(tmp_path):
    values = np.arange(4 << 20, dtype=np.float32).reshape(-1, 256)  # 16 MB
    for name in ("mapped.npy", "pread.npy"):
        np.save(tmp_path / name, values)
    mapped = matrix.map_npy(tmp_path / "mapped.npy", pread_from=1 << 30)
    read = matrix.map_npy(tmp_path / "pread.npy", pread_from=1 << 20)
    wait_for_readers()
    assert mapped_kb(tmp_path / "mapped.npy") >= 16 << 10  # every page, before any row was read
    assert mapped_kb(tmp_path / "pread.npy") == 0  # its rows are read by system calls
    assert np.array_equal(mapped[[5, 7]], values[[5, 7]]) and np.array_equal(read[9], values[9])
