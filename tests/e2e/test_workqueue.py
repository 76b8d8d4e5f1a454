"""e2e/workqueue.py: a key queued once, handed to one worker at a time, due order kept."""

from __future__ import annotations

import threading

from e2e.workqueue import WorkQueue


def test_a_key_queued_twice_is_handed_out_once_at_the_sooner_time() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a", delay=60)
    queue.add("b")
    queue.add("a")  # sooner: now, after "b"
    assert queue.counts() == (2, 2)
    assert [queue.get(), queue.get()] == ["b", "a"]
    queue.done("a")
    assert queue.counts() == (0, 0)  # the later time asked for "a" is gone with it


def test_keys_come_out_in_the_order_they_became_due() -> None:
    queue: WorkQueue[int] = WorkQueue()
    for key in (3, 1, 2):
        queue.add(key)
    queue.add(0, delay=3600)
    assert [queue.get() for _ in range(3)] == [3, 1, 2]
    assert queue.counts() == (1, 0)


def test_a_busy_key_waits_for_its_worker_then_comes_back_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get() == "a"
    queue.add("a")  # an event while a worker has it
    queue.add("a")
    queue.add("b")
    assert queue.get() == "b"  # not "a": its worker is not done
    taken: list[str] = []
    other = threading.Thread(target=lambda: taken.append(queue.get()))
    other.start()
    other.join(0.2)
    assert taken == []  # nothing else is queued while "a" is busy
    queue.done("a")
    other.join(5)
    assert taken == ["a"]
    assert queue.counts() == (0, 0)
