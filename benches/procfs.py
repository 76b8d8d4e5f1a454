"""What the benches read of a process from /proc (Linux): its descendants and its stat."""

from __future__ import annotations

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
