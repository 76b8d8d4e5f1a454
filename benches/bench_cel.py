"""DRA selector evaluation cost: per evaluation (cold compile, warm) and a fleet."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable

from modelplane.domain import dra
from modelplane.domain.dra import Attribute, Device

SELECTORS = [
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
    'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.9.0"))',
    '"gpu.nvidia.com" in device.attributes && device.driver == "gpu.nvidia.com"',
]
SHAPES = [
    ("23034Mi", "Ada Lovelace", "8.9.0"),
    ("46068Mi", "Ada Lovelace", "8.9.0"),
    ("40960Mi", "Ampere", "8.0.0"),
    ("81920Mi", "Ampere", "8.0.0"),
    ("81559Mi", "Hopper", "9.0.0"),
    ("143771Mi", "Hopper", "9.0.0"),
]


def device(memory: str, arch: str, cc: str) -> Device:
    return Device.build(
        "gpu.nvidia.com",
        attributes={
            "architecture": Attribute("string", arch),
            "cudaComputeCapability": Attribute("version", cc),
        },
        capacity={"memory": memory},
    )


def median_us(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def main() -> None:
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, medians")  # fmt: skip
    h100 = device(*SHAPES[4])
    for expression in SELECTORS:

        def cold(e: str = expression) -> None:
            dra.clear_caches()
            dra.compile_selector(e).evaluate(h100)

        selector = dra.compile_selector(expression)

        def warm_eval(s: dra.Selector = selector) -> None:
            s.clear()
            s.evaluate(h100)

        def memoized(s: dra.Selector = selector) -> None:
            s.evaluate(h100)

        print(
            f"  compile+eval {median_us(cold, 200):8.1f} us   "
            f"eval {median_us(warm_eval, 2000):6.1f} us   "
            f"memoized {median_us(memoized, 2000):5.2f} us   {expression[:48]}"
        )
    pools = [device(*SHAPES[i % len(SHAPES)]) for i in range(1000)]
    # Distinct objects with repeated content, as a fleet's pools are.

    def fleet() -> int:
        return sum(dra.matches(e, d).matched for d in pools for e in SELECTORS)

    def fleet_cold() -> int:
        dra.clear_caches()
        return fleet()

    print(f"  fleet 1000 pools x 4 selectors: cold {median_us(fleet_cold, 20) / 1000:.2f} ms, "
          f"warm {median_us(fleet, 20) / 1000:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
