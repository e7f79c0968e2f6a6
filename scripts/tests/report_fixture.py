"""A small bench-history for the report page's tests (test_report_page, test_report_browser):
four snapshots written as bench_snapshot.py writes them (schema 2), three of one machine.

The newest holds every kind of row the page draws: a comparison group with a 1,000x ratio
(codec.crc32 at 4KiB), peers (store.get_record/official-pds), a floor probe
(live.pg_point_select/psql, units.toml `floor_probes`), latency sidecars at 1, 10 and 100
callers, an adjacent probe, a probe group, an unregistered group and a paired re-measurement
(the snapshot's "paired" key, issue 32) with verdicts and a control.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NEWEST = "bench-20261130T200000Z.json"
OLDER_SAME_MACHINE = ("bench-20261130T180000Z.json", "bench-20261130T190000Z.json")
OTHER_MACHINE = "bench-20261130T170000Z.json"
THOUSANDFOLD_GROUP = "codec.crc32"
GROUPS = ("calibrate.cpu", "codec.crc32", "live.pg_point_select", "mystery.thing", "store.get_record", "store.open")

UNITS = """
[groups."calibrate.cpu"]
target = "*"
unit = "a fixed integer mixing loop over 1 MiB"
throughput = "bytes"
compare = ["fixed"]

[groups."codec.crc32"]
target = "hotpath"
unit = "CRC-32 (IEEE) of one buffer of <tier> bytes"
throughput = "bytes"
compare = ["bitwise", "table", "table-256"]

[groups."store.get_record"]
target = "store"
unit = "read one record by key from <tier> concurrent callers"
throughput = "elements"
compare = ["ours", "official-pds"]

[groups."live.pg_point_select"]
target = "live_backends"
unit = "one primary-key SELECT on PostgreSQL from <tier> callers"
throughput = "elements"
compare = ["ours", "raw"]
floor_probes = { raw = "psql" }

[groups."store.open"]
target = "store"
unit = "open the store"
throughput = "none"
compare = ["ours"]
probe = true
"""

FINGERPRINT = {
    "cpu_model": "Fixture CPU",
    "cores": 2,
    "cpu_features": ["avx2", "sse4_2"],
    "rustc": "rustc 1.95.0 (fixture)",
    "calibration": {"calibrate.cpu/fixed/1MiB": 200000.0},
}


def _result(full_id: str, median: float, role: str, unit: str | None, **extra: Any) -> dict[str, Any]:
    group, implementation, tier = (full_id.split("/") + ["", ""])[:3]
    kind = extra.pop("kind", "elements")
    per_iteration = extra.pop("per_iteration", 1)
    throughput = None if kind is None else {"kind": kind, "per_iteration": per_iteration}
    return {
        "group": group,
        "implementation": implementation,
        "tier": tier,
        "median_ns": median,
        "ci_lower_ns": median * 0.98,
        "ci_upper_ns": median * 1.02,
        "throughput": throughput,
        "throughput_per_sec": None if throughput is None else per_iteration / (median * 1e-9),
        "role": role,
        "unit": unit,
        "latency": None,
        **extra,
    }


def latency(callers: int, p50: float) -> dict[str, Any]:
    return {
        "callers": callers,
        "ops": 10000,
        "ops_per_sec": callers / (p50 * 1e-9),
        "mean_ns": p50 * 1.1,
        "p50_ns": p50,
        "p95_ns": p50 * 2.5,
        "p99_ns": p50 * 6,
        "max_ns": p50 * 30,
    }


def results(scale: float) -> dict[str, dict[str, Any]]:
    """Every row of a fixture snapshot, medians times `scale`."""
    units = {}
    for block in UNITS.split("[groups.")[1:]:
        name = block.split('"')[1]
        units[name] = block.split('unit = "')[1].split('"')[0]
    rows: dict[str, dict[str, Any]] = {}

    def add(full_id: str, median: float, role: str = "compare", **extra: Any) -> None:
        group = full_id.split("/")[0]
        rows[full_id] = _result(full_id, median * scale, role, units.get(group), **extra)

    add("calibrate.cpu/fixed/1MiB", 200000.0 / scale, kind="bytes", per_iteration=1 << 20)
    for tier, size, table in (("64B", 64, 20.0), ("4KiB", 4096, 400.0)):
        add(f"codec.crc32/table/{tier}", table, kind="bytes", per_iteration=size)
        add(f"codec.crc32/table-256/{tier}", table * 0.5, kind="bytes", per_iteration=size)
        add(f"codec.crc32/bitwise/{tier}", table * (500.0 if tier == "4KiB" else 8.0), kind="bytes", per_iteration=size)
    for callers, p50 in ((1, 2000.0), (10, 4000.0), (100, 30000.0)):
        tier = f"callers-{callers}"
        add(f"store.get_record/ours/{tier}", p50 / callers, latency=latency(callers, p50))
        add(f"store.get_record/index-only/{tier}", p50 / callers / 2, role="probe", latency=latency(callers, p50 / 2))
        if callers < 100:
            add(
                f"store.get_record/official-pds/{tier}",
                p50 * 7 / callers,
                latency=latency(callers, p50 * 7),
                source="peer",
                peer={"name": "official-pds", "versions": {"@atproto/pds": "0.4.217"}, "node": "v20"},
            )
        add(f"live.pg_point_select/ours/{tier}", p50 * 20 / callers, latency=latency(callers, p50 * 20))
        add(f"live.pg_point_select/raw/{tier}", p50 * 18 / callers, latency=latency(callers, p50 * 18))
        add(f"live.pg_point_select/psql/{tier}", p50 * 15 / callers, role="probe")
    add("store.open/ours", 900000.0, role="probe", kind=None)
    add("mystery.thing/x/1k", 5000.0, role="unregistered")
    rows["mystery.thing/x/1k"]["unit"] = None
    return dict(sorted(rows.items()))


def snapshot(
    created: str, scale: float, commit: str, fingerprint: dict[str, Any], paired: dict[str, Any] | None
) -> dict[str, Any]:
    rows = results(scale)
    fingerprint = {**fingerprint, "calibration": {"calibrate.cpu/fixed/1MiB": rows["calibrate.cpu/fixed/1MiB"]["median_ns"]}}
    document: dict[str, Any] = {
        "schema_version": 2,
        "label": "fixture <snapshot> & co",
        "tag": None,
        "created": created,
        "command": "python3 scripts/bench_snapshot.py --label fixture",
        "git": {"commit": commit * 5, "dirty": False},
        "rustc": fingerprint["rustc"],
        "os": "Linux-fixture",
        "cpu": {"model": fingerprint["cpu_model"], "cores": fingerprint["cores"], "features": fingerprint["cpu_features"]},
        "criterion_version": "0.8.2",
        "dataset": {"fingerprint": "sha256:fixture"},
        "fingerprint": fingerprint,
        "context": {},
        "noise_floor": 0.05,
        "baseline": None,
        "verdicts_withheld": None,
        "results": rows,
        "warnings": [],
    }
    if paired is not None:
        document["paired"] = paired
    return document


def _paired_row(full_id: str, target: str, ratios: list[float], verdict: str, control: bool = False) -> dict[str, Any]:
    ordered = sorted(ratios)
    return {
        "id": full_id,
        "target": target,
        "control": control,
        "ratios": ratios,
        "ratio": ordered[len(ordered) // 2],
        "min": ordered[0],
        "max": ordered[-1],
        "verdict": verdict,
    }


def paired(baseline_file: str, baseline_commit: str, head_commit: str) -> dict[str, Any]:
    return {
        "baseline": {"snapshot": baseline_file, "commit": baseline_commit},
        "head": {"commit": head_commit, "dirty": True},
        "pairs": 5,
        "targets": {
            "hotpath": {"remeasured": True, "why": "crates/codec changed (src/crc32.rs)"},
            "store": {"remeasured": True, "why": "crates/store changed (src/get.rs)"},
            "live_backends": {"remeasured": False, "why": "code unchanged"},
        },
        "floor_pct": 3.1,
        "controls_spread_pct": 3.1,
        "rows": [
            _paired_row("codec.crc32/table/64B", "hotpath", [1.24, 1.25, 1.26, 1.22, 1.3], "slower"),
            _paired_row("codec.crc32/bitwise/64B", "hotpath", [1.01, 0.99, 1.02, 1.0, 1.03], "same"),
            _paired_row("store.get_record/ours/callers-10", "store", [0.81, 0.8, 0.79, 0.82, 0.8], "faster"),
            _paired_row("calibrate.cpu/fixed/1MiB", "hotpath", [1.01, 0.99, 1.02, 0.98, 1.0], "same", control=True),
        ],
    }


def write_history(directory: Path) -> Path:
    """The fixture bench-history in `directory` (with renames.json) and units.toml beside it;
    returns the newest snapshot's path."""
    directory.mkdir(parents=True, exist_ok=True)
    other = {**FINGERPRINT, "cpu_model": "Another CPU"}
    documents = {
        OTHER_MACHINE: snapshot("2026-11-30T17:00:00Z", 3.0, "e", other, None),
        OLDER_SAME_MACHINE[0]: snapshot("2026-11-30T18:00:00Z", 1.05, "a", FINGERPRINT, None),
        OLDER_SAME_MACHINE[1]: snapshot(
            "2026-11-30T19:00:00Z", 1.0, "b", FINGERPRINT, paired(OLDER_SAME_MACHINE[0], "a" * 40, "b" * 40)
        ),
        NEWEST: snapshot("2026-11-30T20:00:00Z", 1.02, "c", FINGERPRINT, paired(OLDER_SAME_MACHINE[1], "b" * 40, "c" * 40)),
    }
    for name, document in documents.items():
        (directory / name).write_text(json.dumps(document, indent=1))
    (directory / "renames.json").write_text("{}")
    (directory.parent / "units.toml").write_text(UNITS)
    return directory / NEWEST
