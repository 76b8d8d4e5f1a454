"""Whether the verdict store the workers share is worth it: a lookup on disk against
evaluating the selector again, for a cheap selector and for costly ones."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable

from modelplane import runtime
from modelplane.domain import dra as cel
from modelplane.domain.dra import Device

SELECTORS = {
    "cheap (11 units)": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "shared threshold (~10k units)": "lists.range(100).all(i, lists.range(30).all(j, j >= 0))",
    "nested macros at the cost limit": (
        "lists.range(100).all(i, lists.range(100).all(j, lists.range(13).all(k, k >= 0)))"
    ),
    "regex at the work limit": (
        "lists.range(9345).all(i, '" + "a" * 1000 + "'.findAll('a|b').size() > 0)"
    ),
}


def cpu_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        samples.append((time.process_time() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f}; CPU time, medians")
    device = Device.build("gpu.nvidia.com", capacity={"memory": "80Gi"})
    folder = runtime.private_folder("modelplane-bench-verdicts-")
    try:
        store = runtime.DiskVerdicts(folder)
        for what, expression in SELECTORS.items():
            selector = cel.compile_selector(expression)
            key = cel.verdict_key(expression, device)

            def evaluate(s: cel.Selector = selector) -> cel.Verdict:
                s.clear()
                return s.evaluate(device)

            slow = selector.max_cost > 100_000
            evaluated = cpu_ms(evaluate, 3 if slow else 500)
            verdict = evaluate()
            store.put(key, verdict)
            looked_up = cpu_ms(lambda k=key: store.get(k), 2000)  # type: ignore[misc]
            print(
                f"  {what:32} evaluate {evaluated:9.3f} ms   disk lookup {looked_up:6.3f} ms"
                f"   (estimate {selector.max_cost}, work {verdict.work})"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
