"""Sidecars the bench harness writes next to Criterion's output.

Owns:
  latency  `<target>/atbench/latency/*.json`, one per id:
           {"id", "callers", "ops", "ops_per_sec", "mean_ns", "p50_ns", "p95_ns", "p99_ns", "max_ns"}
           and optionally "cpu_ns_per_op" (process CPU time per operation, every thread) and
           "machine_cpu_ns_per_op" (the whole machine's busy CPU per operation, servers included);
           keyed by the `id` field (not the file name) and merged into that id's result.
  context  `<target>/atbench/context/*.json`, each a JSON object whose keys are merged, in file
           name order, into the snapshot's `context` (store PRAGMAs, BENCH_DIR, sha-256 backend...).
Problems are reported as warnings, never as a crash: a sidecar is an annotation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LATENCY_FIELDS = ("callers", "ops", "ops_per_sec", "mean_ns", "p50_ns", "p95_ns", "p99_ns", "max_ns")
# Kept when present and a number; older sidecars lack them.
OPTIONAL_LATENCY_FIELDS = ("cpu_ns_per_op", "machine_cpu_ns_per_op")


def _json_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def _load_object(path: Path, warnings: list[str]) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        warnings.append(f"sidecar {path.name}: unreadable ({error})")
        return None
    if not isinstance(value, dict):
        warnings.append(f"sidecar {path.name}: not a JSON object")
        return None
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_latency(directory: Path, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """Latency records keyed by id, each holding LATENCY_FIELDS and any valid OPTIONAL_LATENCY_FIELDS."""
    latency: dict[str, dict[str, Any]] = {}
    for path in _json_files(directory):
        sidecar = _load_object(path, warnings)
        if sidecar is None:
            continue
        invalid = [field for field in LATENCY_FIELDS if not _is_number(sidecar.get(field))]
        if not isinstance(sidecar.get("id"), str):
            invalid.insert(0, "id")
        if invalid:
            warnings.append(f"latency sidecar {path.name}: missing or invalid {', '.join(invalid)}; ignored")
            continue
        if sidecar["id"] in latency:
            warnings.append(f"latency sidecar {path.name}: second sidecar for {sidecar['id']}; ignored")
            continue
        record = {field: sidecar[field] for field in LATENCY_FIELDS}
        for field in OPTIONAL_LATENCY_FIELDS:
            if field not in sidecar:
                continue
            if _is_number(sidecar[field]):
                record[field] = sidecar[field]
            else:
                warnings.append(f"latency sidecar {path.name}: invalid {field}; left out")
        latency[sidecar["id"]] = record
    return latency


def read_context(directory: Path, warnings: list[str]) -> dict[str, Any]:
    """All context sidecars merged into one object; a key set twice keeps the later file's value."""
    context: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for path in _json_files(directory):
        sidecar = _load_object(path, warnings)
        if sidecar is None:
            continue
        for key, value in sidecar.items():
            if key in context and context[key] != value:
                warnings.append(f"context key {key!r} set by both {origin[key]} and {path.name}; kept {path.name}")
            context[key] = value
            origin[key] = path.name
    return context
