"""The pairing rule: per-id paired ratios, the controls' floor, and the verdicts.

A pair is one measurement of the baseline build and one of the working tree's build of the
same id, taken seconds apart (drive.py). Its ratio is head / base (above 1 is slower).
Per row: the median of the pairs' ratios, their min and max.

The floor of a run is the larger of `minimum` (2 % by default) and the controls' spread:
the largest |median ratio - 1| among the control rows, the rows the change cannot reach
(targets.py). A control moved by that much with no code change, so a smaller move of any
row is not evidence. A row's own noise is how far its own measurements of one build moved
from pair to pair: the larger of max/min - 1 over the baseline's measurements and over the
head's. A row whose build moves by 80 % between pairs with no change at all (a 100-caller
row on a loaded machine) cannot show a 60 % change, however the pairs happen to fall.
A row's verdict is "slower" or "faster" only when every pair agrees in direction and its
median ratio is past both the floor and its own noise, on a log scale (slower: median - 1
past them; faster: 1 / median - 1 past them); otherwise "same". A control is therefore
never flagged. With no control, the floor is `minimum` and the report says so.

Pure functions over numbers; `record` gives the "paired" rows of the snapshot JSON
(/work/notes/paired_schema.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

DEFAULT_MINIMUM = 0.02
DEFAULT_PAIRS = 5
ORDER = {"slower": 0, "faster": 1, "same": 2}


@dataclass(frozen=True)
class Measured:
    """One id's pairs in one target: baseline and head medians (ns), pair by pair."""

    id: str
    target: str
    control: bool
    base_ns: tuple[float, ...]
    head_ns: tuple[float, ...]

    @property
    def ratios(self) -> list[float]:
        return [h / b for b, h in zip(self.base_ns, self.head_ns, strict=True) if b > 0]

    @property
    def noise(self) -> float:
        """The row's own noise: how far one build's measurements moved from pair to pair."""
        return max(spread(self.base_ns), spread(self.head_ns))


def spread(values: tuple[float, ...]) -> float:
    """max / min - 1 over positive measurements (0 for fewer than two)."""
    positive = [v for v in values if v > 0]
    return max(positive) / min(positive) - 1 if len(positive) > 1 else 0.0


@dataclass(frozen=True)
class Row:
    id: str
    target: str
    control: bool
    base_ns: tuple[float, ...]
    head_ns: tuple[float, ...]
    ratios: tuple[float, ...]
    ratio: float
    low: float
    high: float
    noise: float
    verdict: str


@dataclass(frozen=True)
class Outcome:
    """Every paired row (flagged first), the floor, and the controls' spread (None without
    controls)."""

    rows: list[Row]
    floor: float
    controls_spread: float | None
    minimum: float

    def count(self, verdict: str) -> int:
        return sum(1 for row in self.rows if row.verdict == verdict and not row.control)

    @property
    def controls(self) -> int:
        return sum(1 for row in self.rows if row.control)


def verdict(ratios: list[float], floor: float, noise: float = 0.0) -> str:
    """'slower', 'faster' or 'same' for one id's paired ratios against the run's floor and the
    row's own noise (both fractions)."""
    if not ratios:
        return "same"
    middle = statistics.median(ratios)
    bar = max(floor, noise)
    if all(r > 1 for r in ratios) and middle - 1 > bar:
        return "slower"
    if all(r < 1 for r in ratios) and middle > 0 and 1 / middle - 1 > bar:
        return "faster"
    return "same"


def controls_spread(measured: list[Measured]) -> float | None:
    """The largest |median paired ratio - 1| among the controls; None without any."""
    moves = [abs(statistics.median(m.ratios) - 1) for m in measured if m.control and m.ratios]
    return max(moves) if moves else None


def analyse(measured: list[Measured], minimum: float = DEFAULT_MINIMUM) -> Outcome:
    """The rows with their verdicts, flagged rows first (largest move first)."""
    spread = controls_spread(measured)
    floor = max(minimum, spread or 0.0)
    rows = []
    for m in measured:
        ratios = m.ratios
        if len(ratios) != len(m.base_ns) or not ratios:
            continue  # a baseline median of zero cannot make a ratio
        middle = statistics.median(ratios)
        noise = m.noise
        word = "same" if m.control else verdict(ratios, floor, noise)
        rows.append(
            Row(
                m.id, m.target, m.control, m.base_ns, m.head_ns, tuple(ratios), middle, min(ratios), max(ratios),
                noise, word,
            )
        )
    rows.sort(key=lambda r: (ORDER[r.verdict], r.control, -abs(r.ratio - 1), r.target, r.id))
    return Outcome(rows, floor, spread, minimum)


def record(outcome: Outcome) -> dict:
    """The outcome's part of the snapshot's "paired" key: floor, spread and rows."""
    return {
        "floor_pct": round(outcome.floor * 100, 3),
        "controls_spread_pct": None if outcome.controls_spread is None else round(outcome.controls_spread * 100, 3),
        "rows": [
            {
                "id": row.id,
                "target": row.target,
                "control": row.control,
                "ratios": [round(r, 5) for r in row.ratios],
                "ratio": round(row.ratio, 5),
                "min": round(row.low, 5),
                "max": round(row.high, 5),
                "noise_pct": round(row.noise * 100, 3),
                "verdict": row.verdict,
                "base_ns": [round(v, 3) for v in row.base_ns],
                "head_ns": [round(v, 3) for v in row.head_ns],
            }
            for row in outcome.rows
        ],
    }
