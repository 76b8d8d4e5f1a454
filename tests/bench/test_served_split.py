"""benches.served_split: each process of the served function named, its use per call."""

from __future__ import annotations

import os

from benches.served_split import TICKS, Usage, per_call, role, usage

ROOT = 100
FORK_SERVER = Usage(0, 0, 0, ROOT, "python -c from multiprocessing.forkserver import main")
TRACKER = Usage(0, 0, 0, ROOT, "python -c from multiprocessing.resource_tracker import main")
WORKER = Usage(0, 0, 0, 101, "python -c from multiprocessing.forkserver import main")
SERVING = Usage(0, 0, 0, 1, "python -m modelplane modeldeployment")


def test_each_process_is_named_by_its_place_in_the_tree() -> None:
    found = {ROOT: SERVING, 101: FORK_SERVER, 102: TRACKER, 103: WORKER}
    roles = {pid: role(pid, ROOT, found) for pid in found}
    assert roles == {ROOT: "serving", 101: "fork server", 102: "resource tracker", 103: "worker"}


def test_use_is_per_call_and_idle_processes_are_left_out() -> None:
    before = {ROOT: SERVING, 103: WORKER, 101: FORK_SERVER}
    busy = WORKER._replace(user=4 * TICKS, system=2 * TICKS, faults=800)
    after = {ROOT: SERVING, 103: busy, 101: FORK_SERVER}
    line = per_call(before, after, ROOT, calls=4)
    assert line == "total 1500 ms | worker 103: user 1000 sys 500 faults 200"


def test_this_process_reads_as_itself_and_a_gone_one_as_none() -> None:
    mine = usage(os.getpid())
    assert mine is not None
    assert mine.parent == os.getppid()
    assert usage(2**22 + 1) is None  # above the kernel's largest pid
