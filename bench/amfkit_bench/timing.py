"""How the lab times a call: warm-up, repetitions, wall and CPU time, the collector held
still (`measure`), and the machine facts a figure means nothing without
(`machine_facts`); docs/benchmarks.md, "How the lab measures".
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Measurement", "Stats", "machine_facts", "measure"]


@dataclass(frozen=True)
class Stats:
    """Median, min and max of a list of durations, in seconds."""

    median: float
    min: float
    max: float

    @classmethod
    def of(cls, samples: list[float]) -> "Stats":
        if not samples:
            raise ValueError("no samples")
        return cls(statistics.median(samples), min(samples), max(samples))

    def to_ms(self) -> dict[str, float]:
        return {"median": self.median * 1e3, "min": self.min * 1e3, "max": self.max * 1e3}


@dataclass(frozen=True)
class Measurement:
    """Wall and CPU time of `repeat` timed calls after `warmup` untimed ones."""

    wall: Stats
    cpu: Stats
    repeat: int
    warmup: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "wall_ms": self.wall.to_ms(),
            "cpu_ms": self.cpu.to_ms(),
            "repeat": self.repeat,
            "warmup": self.warmup,
        }


def measure(fn: Callable[..., Any], *args: Any, repeat: int = 5, warmup: int = 1) -> Measurement:
    """Time `fn(*args)`: `warmup` untimed calls, then `repeat` timed ones with the GC disabled."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    if warmup < 0:
        raise ValueError("warmup must be >= 0")
    for _ in range(warmup):
        fn(*args)
    walls: list[float] = []
    cpus: list[float] = []
    gc_was_enabled = gc.isenabled()
    try:
        gc.collect()
        gc.disable()
        for _ in range(repeat):
            cpu0 = time.process_time()
            wall0 = time.perf_counter()
            result = fn(*args)
            wall1 = time.perf_counter()
            cpu1 = time.process_time()
            del result  # freed after the clock stopped
            walls.append(wall1 - wall0)
            cpus.append(cpu1 - cpu0)
    finally:
        if gc_was_enabled:
            gc.enable()
        else:
            gc.disable()
    return Measurement(Stats.of(walls), Stats.of(cpus), repeat, warmup)


def machine_facts(versions: dict[str, str | None] | None = None) -> dict[str, Any]:
    """Platform, CPU, cores, load average and Python build, plus the given library versions."""
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": load,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "python_build": " ".join(platform.python_build()),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": dict(versions or {}),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
