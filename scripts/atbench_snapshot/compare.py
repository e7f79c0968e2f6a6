"""Deltas between a snapshot's results and its baseline's (renames already applied).

Owns the arithmetic and the verdict:
  Δ time        new_median / old_median - 1 (negative is faster);
  Δ throughput  new_rate / old_rate - 1, when both sides have a rate of the same kind;
  Δ normalised  (new / old) / (cal_new / cal_old) - 1 with cal = median of
                CALIBRATION_ID, so a slower machine is not read as a slower code path;
                None when the calibration id is missing on either side;
  verdict       "regression" / "improvement" only when the two median confidence intervals
                do not overlap AND |Δ time| exceeds the noise floor; else "within noise";
                "new" for an id the baseline lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CALIBRATION_ID = "calibrate.cpu/fixed/1MiB"
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


def calibration_ratio(current: Results, previous: Results) -> float | None:
    """cal_new / cal_old, or None when either side lacks the calibration id."""
    if CALIBRATION_ID not in current or CALIBRATION_ID not in previous:
        return None
    old = previous[CALIBRATION_ID]["median_ns"]
    return current[CALIBRATION_ID]["median_ns"] / old if old > 0 else None


def _throughput_change(new: dict[str, Any], old: dict[str, Any]) -> float | None:
    new_rate, old_rate = new.get("throughput_per_sec"), old.get("throughput_per_sec")
    if new_rate is None or old_rate is None:
        return None
    if (new.get("throughput") or {}).get("kind") != (old.get("throughput") or {}).get("kind"):
        return None
    return change(new_rate, old_rate)


def compare(current: Results, previous: Results, noise_floor: float = DEFAULT_NOISE_FLOOR) -> Comparison:
    """One Delta per current id (sorted), and the baseline ids that vanished."""
    ratio = calibration_ratio(current, previous)
    rows = []
    for full_id, new in sorted(current.items()):
        old = previous.get(full_id)
        if old is None:
            rows.append(Delta(full_id, None, None, None, None, "new"))
            continue
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
    return Comparison(rows, sorted(set(previous) - set(current)), ratio)
