"""What the benches read of a process from /proc (Linux): its descendants, its stat, its
CPU time and its memory."""

from __future__ import annotations

import os
from pathlib import Path


def process_tree(pid: int) -> list[int]:
    """A process and all its descendants (Linux; the process alone elsewhere)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return found


def stat_fields(path: Path) -> list[str]:
    """A /proc stat's fields from the state on (field 3 is index 0); [] if it is gone.

    The command name (field 2) may hold spaces and parentheses: it ends at the last ')'.
    """
    try:
        text = path.read_text()
    except OSError:
        return []
    return text[text.rindex(")") + 2 :].split()


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU time so far (Linux; 0 elsewhere)."""
    fields = stat_fields(Path(f"/proc/{pid}/stat"))
    if not fields:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def pss_mib(pid: int) -> float:
    """A process's proportional set size now (Linux; 0 elsewhere)."""
    return _proc_mib(pid, "smaps_rollup", "Pss:")


def peak_rss_mib(pid: int) -> float:
    """A process's peak resident memory (Linux; 0 elsewhere)."""
    return _proc_mib(pid, "status", "VmHWM:")


def _proc_mib(pid: int, name: str, field: str) -> float:
    """A ``field: N kB`` line of ``/proc/<pid>/<name>`` in MiB; 0 if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return 0.0
    line = next((x for x in text.splitlines() if x.startswith(field)), f"{field} 0 kB")
    return int(line.split()[1]) / 1024
