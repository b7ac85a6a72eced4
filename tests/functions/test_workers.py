"""The local gateway's worker pool: a worker that dies while starting is replaced once."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from capsule.config import Settings
from functions.workers import ProcessPoolInvoker


def _die() -> None:
    os._exit(3)  # a worker killed while starting (a crash, the OOM killer)


def _start_nothing() -> None:
    pass


class Invoker(ProcessPoolInvoker):
    """Workers whose first ``crashes`` pools die while starting; later pools start empty."""

    def __init__(self, crashes: int) -> None:
        self.pools = 0
        self.crashes = crashes
        super().__init__(Settings(embedder="hashing"), workers=1)

    def _new_pool(self) -> ProcessPoolExecutor:
        self.pools += 1
        start = _die if self.pools <= self.crashes else _start_nothing
        return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=start)


def test_a_worker_that_dies_while_starting_is_replaced_once():
    invoker = Invoker(crashes=1)
    try:
        invoker.warm()
        assert invoker.pools == 2
    finally:
        invoker.close()


def test_workers_that_keep_dying_stop_the_start():
    invoker = Invoker(crashes=5)
    try:
        with pytest.raises(BrokenProcessPool):
            invoker.warm()
        assert invoker.pools == 2
    finally:
        invoker.close()
