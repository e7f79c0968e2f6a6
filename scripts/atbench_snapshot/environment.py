"""What a snapshot records about where and on what it ran.

Owns: git commit and dirty flag, `rustc -V`, OS, CPU model, core count and code-path features, the Criterion
version locked in Cargo.lock, and the dataset fingerprint from data/MANIFEST.json. Each probe
tolerates its source being absent (no git, no rustc, no /proc) and says "unknown" or null.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tomllib
from pathlib import Path
from typing import Any

from . import machine
from .proc import output as _run

NO_DATASET = "none (in-memory sample)"



def git_state(root: Path) -> dict[str, Any]:
    """{"commit": sha or None, "dirty": bool or None}; None when git or a commit is unavailable."""
    commit = _run(["git", "rev-parse", "HEAD"], root)
    status = _run(["git", "status", "--porcelain"], root)
    return {
        "commit": commit.strip() if commit else None,
        "dirty": None if status is None else bool(status.strip()),
    }


def rustc_version(root: Path) -> str:
    """`rustc -V` run at the root, so rust-toolchain.toml picks the toolchain."""
    output = _run(["rustc", "-V"], root)
    return output.strip() if output else "unknown"


def cpu_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """{"model": first "model name" in /proc/cpuinfo (else platform.processor()), "cores": os.cpu_count(),
    "features": the code-path CPU features (machine.cpu_features), None when unreadable}."""
    model = ""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
                break
    except OSError:
        pass
    return {
        "model": model or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "features": machine.cpu_features(cpuinfo),
    }


def criterion_version(cargo_lock: Path) -> str:
    """The version(s) of package `criterion` in Cargo.lock, or "unknown"."""
    try:
        lock = tomllib.loads(cargo_lock.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return "unknown"
    versions = sorted({p.get("version", "") for p in lock.get("package", []) if p.get("name") == "criterion"})
    return ", ".join(v for v in versions if v) or "unknown"


def dataset_fingerprint(manifest: Path, warnings: list[str]) -> dict[str, Any]:
    """{"fingerprint": "sha256:<hex of the manifest bytes>", "seed", "target_mb"} or the in-memory marker."""
    try:
        content = manifest.read_bytes()
    except OSError:
        return {"fingerprint": NO_DATASET}
    dataset: dict[str, Any] = {"fingerprint": "sha256:" + hashlib.sha256(content).hexdigest()}
    try:
        parsed = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        warnings.append(f"{manifest}: not valid JSON ({error}); fingerprint covers its bytes only")
        return dataset
    if isinstance(parsed, dict):
        for field in ("seed", "target_mb"):
            if field in parsed:
                dataset[field] = parsed[field]
    return dataset


def collect(root: Path, warnings: list[str]) -> dict[str, Any]:
    """Every environment field of a snapshot, for the repository at `root`."""
    return {
        "git": git_state(root),
        "rustc": rustc_version(root),
        "os": platform.platform(),
        "cpu": cpu_info(),
        "criterion_version": criterion_version(root / "Cargo.lock"),
        "dataset": dataset_fingerprint(root / "data" / "MANIFEST.json", warnings),
        "load": load_average(),
    }


def load_average() -> dict[str, float] | None:
    """The 1-, 5- and 15-minute load averages when the snapshot is taken (None where the OS
    has none): the 15-minute one covers most of a run."""
    try:
        one, five, fifteen = os.getloadavg()
    except (AttributeError, OSError):
        return None
    return {"1m": round(one, 2), "5m": round(five, 2), "15m": round(fifteen, 2)}
