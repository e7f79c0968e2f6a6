"""Deltas between a snapshot's results and its baseline's (renames already applied).

Owns the arithmetic and the verdict:
  Δ time        new_median / old_median - 1 (negative is faster);
  Δ throughput  new_rate / old_rate - 1, when both sides have a rate of the same kind;
  Δ normalised  (new / old) / (cal_new / cal_old) - 1, where cal is the calibration kernel
                the registry names for the row's group (`calibration = "calibrate.…"`),
                or, when it names none, the geometric mean of every kernel both runs
                have; None when that kernel is missing on either side. Informational:
                it never decides a verdict (only same-machine baselines get verdicts);
  verdict       "regression" / "improvement" only when the two median confidence intervals
                do not overlap AND |Δ time| exceeds the noise floor; else "within noise";
                "new" for an id the baseline lacks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .machine import is_calibration

CALIBRATION_ID = "calibrate.cpu/fixed/1MiB"
GEOMETRIC_MEAN = "geometric mean"
DEFAULT_NOISE_FLOOR = 0.05

Results = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Delta:
    id: str
    previous_median_ns: float | None
    time: float | None
    throughput: float | None
    normalised: float | None
    verdict: str


@dataclass(frozen=True)
class Comparison:
    rows: list[Delta]
    vanished: list[str]
    calibration_ratio: float | None
    kernel_ratios: dict[str, float] = field(default_factory=dict)

    def count(self, verdict: str) -> int:
        return sum(1 for row in self.rows if row.verdict == verdict)


def change(new: float, old: float) -> float | None:
    """new / old - 1, or None when old is not positive."""
    return new / old - 1 if old > 0 else None


def normalised_change(new: float, old: float, calibration_ratio: float | None) -> float | None:
    """(new / old) / calibration_ratio - 1, where calibration_ratio = cal_new / cal_old."""
    if calibration_ratio is None or calibration_ratio <= 0 or old <= 0:
        return None
    return (new / old) / calibration_ratio - 1


def intervals_overlap(new: dict[str, Any], old: dict[str, Any]) -> bool:
    return new["ci_lower_ns"] <= old["ci_upper_ns"] and old["ci_lower_ns"] <= new["ci_upper_ns"]


def verdict(new: dict[str, Any], old: dict[str, Any], noise_floor: float) -> str:
    delta = change(new["median_ns"], old["median_ns"])
    if delta is None or intervals_overlap(new, old) or abs(delta) <= noise_floor:
        return "within noise"
    return "regression" if delta > 0 else "improvement"


def kernel_ratios(current: Results, previous: Results) -> dict[str, float]:
    """{calibration group: cal_new / cal_old} for every kernel both runs have."""
    ratios: dict[str, float] = {}
    for full_id, new in sorted(current.items()):
        old = previous.get(full_id)
        if is_calibration(full_id) and old and old["median_ns"] > 0:
            ratios.setdefault(new["group"], new["median_ns"] / old["median_ns"])
    return ratios


def geometric_mean(ratios: dict[str, float]) -> float | None:
    values = [r for r in ratios.values() if r > 0]
    return math.exp(sum(math.log(r) for r in values) / len(values)) if values else None


def calibration_ratio(current: Results, previous: Results) -> float | None:
    """The default divisor: the geometric mean of every shared kernel's cal_new / cal_old."""
    return geometric_mean(kernel_ratios(current, previous))


def _throughput_change(new: dict[str, Any], old: dict[str, Any]) -> float | None:
    new_rate, old_rate = new.get("throughput_per_sec"), old.get("throughput_per_sec")
    if new_rate is None or old_rate is None:
        return None
    if (new.get("throughput") or {}).get("kind") != (old.get("throughput") or {}).get("kind"):
        return None
    return change(new_rate, old_rate)


def compare(
    current: Results,
    previous: Results,
    noise_floor: float = DEFAULT_NOISE_FLOOR,
    kernels: dict[str, str] | None = None,
) -> Comparison:
    """One Delta per current id (sorted), and the baseline ids that vanished. `kernels` maps a
    group to the calibration group its Δ normalised divides by (registry `calibration`)."""
    per_kernel = kernel_ratios(current, previous)
    default = geometric_mean(per_kernel)
    kernels = kernels or {}
    rows = []
    for full_id, new in sorted(current.items()):
        old = previous.get(full_id)
        if old is None:
            rows.append(Delta(full_id, None, None, None, None, "new"))
            continue
        kernel = kernels.get(new.get("group", ""))
        ratio = per_kernel.get(kernel) if kernel else default
        rows.append(
            Delta(
                id=full_id,
                previous_median_ns=old["median_ns"],
                time=change(new["median_ns"], old["median_ns"]),
                throughput=_throughput_change(new, old),
                normalised=normalised_change(new["median_ns"], old["median_ns"], ratio),
                verdict=verdict(new, old, noise_floor),
            )
        )
    return Comparison(rows, sorted(set(previous) - set(current)), default, per_kernel)
