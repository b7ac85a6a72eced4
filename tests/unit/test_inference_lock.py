"""capsule.embedders.inference: one batch at a time on a local model, a waiting query first."""

from __future__ import annotations

import threading

from capsule.embedders.inference import InferenceLock


def _wait_for(condition) -> None:
    event = threading.Event()
    while not condition():
        event.wait(0.001)


def test_a_waiting_query_goes_before_waiting_documents():
    lock = InferenceLock()
    order: list[str] = []

    def batch(name: str, query: bool) -> None:
        with lock.turn(query=query):
            order.append(name)

    with lock.turn(query=False):  # a document batch running
        documents = [threading.Thread(target=batch, args=(f"document {i}", False)) for i in range(2)]
        for thread in documents:
            thread.start()
        _wait_for(lambda: lock.waiting == 2)
        query = threading.Thread(target=batch, args=("query", True))
        query.start()
        _wait_for(lambda: lock.waiting == 3)
    for thread in [*documents, query]:
        thread.join()
    assert order[0] == "query" and sorted(order[1:]) == ["document 0", "document 1"]


def test_one_batch_at_a_time_and_the_lock_is_free_after_an_error():
    lock = InferenceLock()
    running, most = 0, 0
    guard = threading.Lock()

    def batch(query: bool) -> None:
        nonlocal running, most
        with lock.turn(query=query):
            with guard:
                running += 1
                most = max(most, running)
            threading.Event().wait(0.001)
            with guard:
                running -= 1

    threads = [threading.Thread(target=batch, args=(i % 3 == 0,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1
    try:
        with lock.turn(query=True):
            raise RuntimeError("the model failed")
    except RuntimeError:
        pass
    with lock.turn(query=False):  # not left held
        assert lock.waiting == 0
