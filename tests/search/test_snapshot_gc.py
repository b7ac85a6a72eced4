"""Snapshots are read with Python's cycle collector held off (capsule.search.snapshot.gc_paused):
each collection during unpickling walked every object made so far (100 snapshots of 10k rows:
6.4 s with it, 1.4 s without). It comes back as it was, whichever reader ends last."""

from __future__ import annotations

import gc
import threading

import pytest

from capsule.search import snapshot
from capsule.search.snapshot import gc_paused

from .test_index_snapshot import fill


@pytest.fixture(autouse=True)
def collector_back():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_while_any_reader_reads_and_back_as_it_was():
    gc.enable()
    first_in, second_out = threading.Event(), threading.Event()
    seen = []

    def other():
        with gc_paused():
            first_in.wait()
            seen.append(gc.isenabled())
        second_out.set()

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        first_in.set()
        second_out.wait(10)
        seen.append(gc.isenabled())  # the other reader is done, this one is not
    thread.join()
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()  # off before: left off


def test_a_snapshot_is_unpickled_with_the_collector_off(make_service, monkeypatch):
    first = make_service(index_snapshot_min=10)
    fill(first, 300)
    first.search("t", {"project": "p", "query": "redis timeout", "k": 5})
    first.settle()
    states = []
    real = snapshot.pickle.load

    def load(handle):
        states.append(gc.isenabled())
        return real(handle)

    monkeypatch.setattr(snapshot.pickle, "load", load)
    gc.enable()
    again = make_service(index_snapshot_min=10)
    assert again.search("t", {"project": "p", "query": "redis timeout", "k": 5}).results
    assert states == [False, False] and gc.isenabled()  # the index, then its records
