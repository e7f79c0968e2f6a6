"""Reads Criterion 0.8.2 output and splits benchmark ids.

Owns: finding every `<criterion dir>/**/new/benchmark.json`, taking the id from its
`full_id` (never the mangled folder name), the throughput from its `throughput`, and the
median with its confidence interval (ns) from the sibling `new/estimates.json`, the fastest
sample from `new/sample.json` (what the paired re-measurement compares); and the id grammar `<area>.<operation>/<implementation>[.<variant>]/<tier>`.

Criterion's JSON is not a stable interface, which is why the workspace pins it exactly and
scripts/tests/fixtures/criterion-0.8.2/ holds real captured output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

Result = dict[str, Any]


class CriterionError(Exception):
    """Criterion output is missing or unreadable."""


def split_id(full_id: str) -> tuple[str, str, str]:
    """(group, implementation, tier) of an id; missing parts are empty strings.

    `codec.crc32/table/64B` -> ("codec.crc32", "table", "64B");
    `store.open/ours.nosync` -> ("store.open", "ours.nosync", "").
    """
    parts = full_id.split("/", 2)
    parts += [""] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


TIER_PATTERN = re.compile(r"^(?P<prefix>[a-z_-]*?)(?P<number>\d+(?:\.\d+)?)(?P<unit>B|KiB|MiB|GiB|TiB|k|m)?$")
TIER_MULTIPLIERS = {None: 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "k": 1e3, "m": 1e6}


def tier_sort_key(tier: str) -> tuple[str, float, str]:
    """Orders tiers by size within a kind: 64B < 1KiB < 16KiB, 1k < 100k < 1m, callers-1 < callers-10.
    A tier that is not a size sorts by its text."""
    match = TIER_PATTERN.match(tier)
    if match is None:
        return (tier, 0.0, tier)
    size = float(match["number"]) * TIER_MULTIPLIERS[match["unit"]]
    return (match["prefix"], size, tier)


def parse_throughput(raw: Any) -> dict[str, Any] | None:
    """Criterion's serialized `Throughput` as {kind: bytes|elements, per_iteration: N}.

    Bytes and BytesDecimal count bytes; Bits are converted to bytes; Elements counts
    elements; ElementsAndBytes keeps elements, Criterion's primary unit for it.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) != 1:
        raise CriterionError(f"unrecognised throughput {raw!r}")
    ((variant, value),) = raw.items()
    if variant in ("Bytes", "BytesDecimal"):
        return {"kind": "bytes", "per_iteration": int(value)}
    if variant == "Bits":
        return {"kind": "bytes", "per_iteration": int(value) / 8}
    if variant == "Elements":
        return {"kind": "elements", "per_iteration": int(value)}
    if variant == "ElementsAndBytes":
        return {"kind": "elements", "per_iteration": int(value["elements"])}
    raise CriterionError(f"unrecognised throughput kind {variant!r}")


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CriterionError(f"cannot read {path}: {error}") from error


def read_measurement(benchmark_json: Path) -> tuple[str, Result]:
    """The full id and result record from a `new/benchmark.json` and its sibling `new/estimates.json`."""
    benchmark = _load_json(benchmark_json)
    estimates = _load_json(benchmark_json.with_name("estimates.json"))
    try:
        full_id = benchmark["full_id"]
        median = estimates["median"]
        median_ns = float(median["point_estimate"])
        lower_ns = float(median["confidence_interval"]["lower_bound"])
        upper_ns = float(median["confidence_interval"]["upper_bound"])
    except (KeyError, TypeError, ValueError) as error:
        raise CriterionError(f"unexpected Criterion JSON near {benchmark_json}: missing {error}") from error
    group, implementation, tier = split_id(full_id)
    throughput = parse_throughput(benchmark.get("throughput"))
    per_sec = None
    if throughput is not None and median_ns > 0:
        per_sec = throughput["per_iteration"] / (median_ns * 1e-9)
    return full_id, {
        "group": group,
        "implementation": implementation,
        "tier": tier,
        "median_ns": median_ns,
        "ci_lower_ns": lower_ns,
        "ci_upper_ns": upper_ns,
        "throughput": throughput,
        "throughput_per_sec": per_sec,
    }


def read_criterion_dir(criterion_dir: Path) -> dict[str, Result]:
    """Every result under `criterion_dir`, keyed by full id.

    Raises CriterionError when the directory is missing or holds no `new/benchmark.json`,
    or when two folders claim the same full id.
    """
    if not criterion_dir.is_dir():
        raise CriterionError(
            f"no Criterion output: {criterion_dir} does not exist (run `cargo bench --features bench-internals` first)"
        )
    results: dict[str, Result] = {}
    for path in sorted(criterion_dir.rglob("new/benchmark.json")):
        full_id, record = read_measurement(path)
        if full_id in results:
            raise CriterionError(f"two Criterion folders report the id {full_id!r} (second: {path.parent.parent})")
        results[full_id] = record
    if not results:
        raise CriterionError(
            f"no Criterion output: no */new/benchmark.json under {criterion_dir} "
            "(run `cargo bench --features bench-internals` first)"
        )
    return dict(sorted(results.items()))


def fastest_sample_ns(benchmark_json: Path) -> float:
    """The fastest per-iteration time (ns) among the samples of the sibling `new/sample.json`
    (Criterion 0.8.2: {"iters": [...], "times": [total ns per sample]}). The paired
    re-measurement compares this, not the median: a process that shares its cores only ever
    gets slower, so the least disturbed sample is the closest to the code's own time."""
    sample = _load_json(benchmark_json.with_name("sample.json"))
    try:
        pairs = [(float(t), float(i)) for t, i in zip(sample["times"], sample["iters"], strict=True) if float(i) > 0]
    except (KeyError, TypeError, ValueError) as error:
        raise CriterionError(f"unexpected Criterion sample near {benchmark_json}: {error}") from error
    if not pairs:
        raise CriterionError(f"no samples in {benchmark_json.with_name('sample.json')}")
    return min(t / i for t, i in pairs)


def read_fastest_dir(criterion_dir: Path) -> dict[str, float]:
    """{full id: fastest_sample_ns} for every benchmark under `criterion_dir`."""
    found: dict[str, float] = {}
    for path in sorted(criterion_dir.rglob("new/benchmark.json")):
        full_id = _load_json(path).get("full_id")
        if isinstance(full_id, str):
            found[full_id] = fastest_sample_ns(path)
    return found
