"""Peer results: the reference implementations measured in the same run (`BENCH_PEERS=1`).

Owns reading `<target>/atbench/peers/*.json`, one file per peer id, written by the probes
under `peers/` (shape: peers/common/measure.js; checked by benches/src/peers/mod.rs), and
turning each into a result record beside Criterion's:

  median_ns            1e9 / the median run's ops/s (time per operation, as Criterion's
                       rows of the concurrent runner are: wall time / operations)
  ci_lower/upper_ns    from the fastest and slowest run (a run is one measurement phase)
  throughput           as the probe declares it (same kind and size as our row)
  source               "peer"
  peer                 {name, versions, node, created, runs, ops, timing, check, sqlite?}
  latency              the percentiles, for ids timed per operation (`timing` "per-op":
                       concurrent callers); batched ids keep theirs under `peer` only

A file that is unreadable, lacks a field or does not say it was verified is a warning and
is left out: a peer number without its check is not reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .criterion import split_id

REQUIRED = ("id", "peer", "versions", "node", "callers", "ops", "runs", "ops_per_sec", "p50_ns", "p95_ns", "p99_ns")
PEER_FIELDS = ("versions", "node", "created", "runs", "ops", "timing", "check", "sqlite", "samples")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _rates(runs: Any) -> list[float]:
    if not isinstance(runs, list):
        return []
    return [r["ops_per_sec"] for r in runs if isinstance(r, dict) and _number(r.get("ops_per_sec")) and r["ops_per_sec"] > 0]


def to_result(raw: dict[str, Any]) -> tuple[str, dict[str, Any]] | str:
    """(id, result record) of one peer file, or why it is left out."""
    missing = [field for field in REQUIRED if field not in raw]
    if missing:
        return f"missing {', '.join(missing)}"
    if raw.get("verified") is not True:
        return "not verified"
    rate = raw["ops_per_sec"]
    rates = _rates(raw["runs"])
    if not _number(rate) or rate <= 0 or not rates:
        return "no positive ops_per_sec"
    throughput = raw.get("throughput")
    if throughput is not None and not (
        isinstance(throughput, dict)
        and throughput.get("kind") in ("bytes", "elements")
        and _number(throughput.get("per_iteration"))
    ):
        return "unrecognised throughput"
    full_id = raw["id"]
    group, implementation, tier = split_id(full_id)
    peer = {field: raw[field] for field in PEER_FIELDS if field in raw}
    peer["name"] = raw["peer"]
    latency = None
    if raw.get("timing") == "per-op":
        latency = {
            "callers": raw["callers"],
            "ops": raw["ops"],
            "ops_per_sec": rate,
            "mean_ns": raw.get("mean_ns", raw["p50_ns"]),
            "p50_ns": raw["p50_ns"],
            "p95_ns": raw["p95_ns"],
            "p99_ns": raw["p99_ns"],
            "max_ns": raw.get("max_ns", raw["p99_ns"]),
        }
    per_iteration = throughput["per_iteration"] if throughput else None
    return full_id, {
        "group": group,
        "implementation": implementation,
        "tier": tier,
        "median_ns": 1e9 / rate,
        "ci_lower_ns": 1e9 / max(rates),
        "ci_upper_ns": 1e9 / min(rates),
        "throughput": throughput,
        "throughput_per_sec": per_iteration * rate if per_iteration is not None else None,
        "source": "peer",
        "peer": peer,
        "latency": latency,
    }


def read_peers(directory: Path, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """Every usable peer result under `directory` (absent: none), keyed by id."""
    results: dict[str, dict[str, Any]] = {}
    if not directory.is_dir():
        return results
    for path in sorted(directory.glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            warnings.append(f"peer result {path.name}: unreadable ({error}); left out")
            continue
        if not isinstance(raw, dict):
            warnings.append(f"peer result {path.name}: not a JSON object; left out")
            continue
        converted = to_result(raw)
        if isinstance(converted, str):
            warnings.append(f"peer result {path.name}: {converted}; left out")
            continue
        full_id, record = converted
        if full_id in results:
            warnings.append(f"peer result {path.name}: second result for {full_id}; left out")
            continue
        results[full_id] = record
    return results


def merge(results: dict[str, dict[str, Any]], peer_results: dict[str, dict[str, Any]], warnings: list[str]) -> None:
    """Adds the peer results to Criterion's (an id both report keeps Criterion's)."""
    for full_id, record in peer_results.items():
        if full_id in results:
            warnings.append(f"peer result {full_id}: Criterion reports the same id; kept Criterion's")
            continue
        results[full_id] = record
