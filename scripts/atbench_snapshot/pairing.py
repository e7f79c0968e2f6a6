"""The pairing rule: per-id paired ratios, the controls' floor, and the verdicts.

A pair is one measurement of the baseline build and one of the working tree's build of the
same id, taken seconds apart (drive.py). Its ratio is head / base (above 1 is slower).
Per row: the median of the pairs' ratios, their min and max.

The floor of a row is the larger of `minimum` (2 % by default) and the spread of the controls
of its kind of work (kinds.py: cpu, memory, io, network, threads): the largest |median ratio -
1| among the control rows of that kind, the rows the change cannot reach (targets.py). A
control moved by that much with no code change, so a smaller move of a row of that kind is
not evidence. A row whose kind has no control in the run (or has no kind) is held to the
spread of all controls, the old single floor, which `Outcome.floor` still gives. A row's own noise is how far its own measurements of one build moved
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
from dataclasses import dataclass, field, replace

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
    kind: str | None = None

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
    kind: str | None = None
    floor: float | None = None


@dataclass(frozen=True)
class KindFloor:
    """One kind's floor: its controls' spread (None: no control of the kind ran, so the floor
    is all controls'), how many controls, how many of our rows."""

    floor: float
    spread: float | None
    controls: int
    rows: int


@dataclass(frozen=True)
class Outcome:
    """Every paired row (flagged first), the floor of all controls, their spread (None without
    controls), and the floor of each kind of work present."""

    rows: list[Row]
    floor: float
    controls_spread: float | None
    minimum: float
    kinds: dict[str, KindFloor] = field(default_factory=dict)

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


NO_KIND = "unclassified"


def kind_floors(measured: list[Measured], minimum: float) -> dict[str, KindFloor]:
    """The floor of each kind present: its own controls' spread, else all controls'."""
    every = controls_spread(measured)
    floors = {}
    for kind in sorted({m.kind or NO_KIND for m in measured}):
        mine = [m for m in measured if (m.kind or NO_KIND) == kind]
        own = controls_spread(mine) if kind != NO_KIND else None
        floors[kind] = KindFloor(
            max(minimum, own if own is not None else (every or 0.0)), own,
            sum(1 for m in mine if m.control), sum(1 for m in mine if not m.control),
        )
    return floors


def analyse(
    measured: list[Measured], minimum: float = DEFAULT_MINIMUM, kind_of=None, extended: set[str] | None = None
) -> Outcome:
    """The rows with their verdicts, flagged rows first (largest move first). `kind_of(id)`
    names a row's kind of work where the measurement does not (kinds.Kinds.of)."""
    if kind_of is not None:
        measured = [m if m.kind else replace(m, kind=kind_of(m.id)) for m in measured]
    spread = controls_spread(measured)
    overall = max(minimum, spread or 0.0)
    floors = kind_floors(measured, minimum)
    rows = []
    for m in measured:
        floor = floors[m.kind or NO_KIND].floor
        ratios = m.ratios
        if len(ratios) != len(m.base_ns) or not ratios:
            continue  # a baseline median of zero cannot make a ratio
        middle = statistics.median(ratios)
        noise = m.noise
        if m.control:
            word = "same"
        elif extended and m.id in extended:
            word = sequential_verdict(ratios, floor)
        else:
            word = verdict(ratios, floor, noise)
        rows.append(
            Row(
                m.id, m.target, m.control, m.base_ns, m.head_ns, tuple(ratios), middle, min(ratios), max(ratios),
                noise, word, m.kind, floor,
            )
        )
    rows.sort(key=lambda r: (ORDER[r.verdict], r.control, -abs(r.ratio - 1), r.target, r.id))
    return Outcome(rows, overall, spread, minimum, floors)


def record(outcome: Outcome) -> dict:
    """The outcome's part of the snapshot's "paired" key: floor, spread and rows."""
    return {
        "floor_pct": round(outcome.floor * 100, 3),
        "controls_spread_pct": None if outcome.controls_spread is None else round(outcome.controls_spread * 100, 3),
        "floors_by_kind": {
            kind: {
                "floor_pct": round(k.floor * 100, 3),
                "controls_spread_pct": None if k.spread is None else round(k.spread * 100, 3),
                "controls": k.controls,
                "rows": k.rows,
            }
            for kind, k in outcome.kinds.items()
        },
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
                "kind": row.kind,
                "floor_pct": None if row.floor is None else round(row.floor * 100, 3),
                "base_ns": [round(v, 3) for v in row.base_ns],
                "head_ns": [round(v, 3) for v in row.head_ns],
            }
            for row in outcome.rows
        ],
    }


# --- pairs where undecided (issue 48 item 3) -------------------------------------------------
#
# A row whose pairs all agree in direction and whose median move sits past its bar (the floor
# or its own noise, whichever is larger) but not past twice the bar is *undecided*: the first
# STAGE pairs would flag it, yet a machine that drifts by about the bar does that too. It gets
# more pairs, STAGE at a time, up to `max_pairs` in all (the budget), and its verdict is then a
# sign test on all its pairs: at least `needed(n)` of n pairs in the median's direction, and
# the median move still past the floor. A row decided at the first stage (past twice the bar, or
# not past the bar, or with a dissenting pair) keeps the one-stage rule.
#
# False-positive rate: under no change, with pairs independent and each as likely to come out
# either way, the one-stage rule flags a row when all 5 agree: 2 / 2^5 = 6.25 % of rows before
# the floor is applied (the floor is what brings it to ~0). needed(n) is the least k with
# P(Binom(n, 1/2) >= k) <= 1/32 (the one-stage rule's one-sided level), and a row reaches the
# extension only after 5 of 5 agreed, so the sequence's sign-test false-positive rate is
# P(5 agree) x P(the extended test passes | 5 agreed) <= 6.25 % (`false_positive_rate` computes
# it exactly: 1.07 % for 15 pairs, 1.17 % for 10, against 6.25 % for the same rows under the
# one-stage rule).

STAGE = 5
DEFAULT_MAX_PAIRS = 15


def _tail(n: int, k: int) -> float:
    """P(Binom(n, 1/2) >= k)."""
    from math import comb

    return sum(comb(n, j) for j in range(k, n + 1)) / 2**n


def needed(n: int) -> int:
    """The least number of n pairs that must agree for a verdict (n pairs in all)."""
    return next(k for k in range(n + 1) if _tail(n, k) <= 1 / 32)


def undecided(ratios: list[float] | tuple[float, ...], floor: float, noise: float = 0.0) -> bool:
    """Whether a row gets more pairs: all pairs agree and its move sits in (bar, 2 x bar]."""
    if not ratios or statistics.median(ratios) <= 0:
        return False
    middle = statistics.median(ratios)
    bar = max(floor, noise)
    move = middle - 1 if middle >= 1 else 1 / middle - 1
    agree = all(r > 1 for r in ratios) or all(r < 1 for r in ratios)
    return agree and bar < move <= 2 * bar


def sequential_verdict(ratios: list[float] | tuple[float, ...], floor: float) -> str:
    """The verdict of a row that was extended past STAGE pairs: at least needed(n) of its n
    pairs in the median's direction and the median move past the floor. The row's own noise
    is no bar here: it guards 5 pairs that may fall lucky, and any dissenting pair raises it to
    about the move itself; over n pairs the sign test is that guard."""
    if len(ratios) <= STAGE:
        return verdict(list(ratios), floor)
    middle = statistics.median(ratios)
    bar = floor
    slower = sum(1 for r in ratios if r > 1)
    faster = sum(1 for r in ratios if r < 1)
    if middle > 1 and slower >= needed(len(ratios)) and middle - 1 > bar:
        return "slower"
    if 0 < middle < 1 and faster >= needed(len(ratios)) and 1 / middle - 1 > bar:
        return "faster"
    return "same"


def false_positive_rate(max_pairs: int = DEFAULT_MAX_PAIRS) -> float:
    """The sign-test false-positive rate of an extended row (see above), exactly: both
    directions, the first STAGE pairs all agreeing, then the extended test at max_pairs."""
    if max_pairs <= STAGE:
        return 2 / 2**STAGE
    extra = max_pairs - STAGE
    k = needed(max_pairs)
    # given the first 5 agree (one way), the rest need k - 5 more of `extra` the same way
    return 2 / 2**STAGE * _tail(extra, max(0, k - STAGE))
