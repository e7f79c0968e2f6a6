"""The machine fingerprint of a snapshot, and whether two snapshots ran on the same machine.

Owns:
  - the fingerprint: CPU model, core count, the CPU features that change code paths
    (CODE_PATH_FEATURES, as /proc/cpuinfo names them), rustc, and the median of every
    calibration kernel (ids of area `calibrate`);
  - the same-machine rule: two fingerprints match when model, cores, features and rustc are
    equal and every calibration kernel both snapshots ran has medians within
    CALIBRATION_TOLERANCE of each other (and they share at least one kernel);
  - the baseline search: the newest earlier snapshot that matches.

A snapshot written before fingerprints existed (schema 1, no `fingerprint`) is an "unknown
machine": readable, never a same-machine baseline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CALIBRATION_AREA = "calibrate"
CALIBRATION_TOLERANCE = 0.10

# The features our crates or their dependencies dispatch on at run time (SHA-NI in sha2 and
# repo::sha256x2, AVX2/AVX-512 in base64-simd, simd-json and sonic-rs, PCLMULQDQ in crc32fast,
# BMI2 in zstd, ERMS/FSRM in glibc's memcpy). A flag outside this list (a hypervisor bit, a
# mitigation) does not pick code, so two VMs differing only there are one machine.
CODE_PATH_FEATURES = (
    "sse4_1",
    "sse4_2",
    "ssse3",
    "popcnt",
    "pclmulqdq",
    "vpclmulqdq",
    "aes",
    "vaes",
    "avx",
    "avx2",
    "fma",
    "bmi1",
    "bmi2",
    "lzcnt",
    "abm",
    "movbe",
    "adx",
    "sha_ni",
    "erms",
    "fsrm",
    "gfni",
    "avx512f",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512vl",
    "avx512vbmi",
    "avx512_vbmi2",
    "avx512ifma",
    "avx512_vnni",
    "avx512_vpopcntdq",
    # aarch64 names
    "asimd",
    "sha2",
    "pmull",
    "crc32",
    "sve",
    "sve2",
)


def cpu_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str] | None:
    """The code-path features among the first `flags` (x86) or `Features` (arm) line, sorted;
    None when /proc/cpuinfo cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            present = set(value.split())
            return sorted(f for f in CODE_PATH_FEATURES if f in present)
    return []


# Kernels of the kinds that wait (fsync, loopback, thread hand-off): controls of their kinds in
# the paired re-measurement, but they move with the disk and the scheduler from one minute to
# the next, so they are no part of the machine's fingerprint nor of "Δ vs calibration".
WAIT_KERNELS = ("calibrate.fsync", "calibrate.loopback", "calibrate.threads")


def is_calibration(full_id: str) -> bool:
    """A compute kernel of the machine's fingerprint (not a wait kernel)."""
    return full_id.split(".", 1)[0] == CALIBRATION_AREA and full_id.split("/", 1)[0] not in WAIT_KERNELS


def calibration_medians(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """{calibration id: median ns} of a run's results."""
    return {i: r["median_ns"] for i, r in sorted(results.items()) if is_calibration(i)}


def fingerprint(cpu: dict[str, Any], rustc: str, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The fingerprint recorded in a snapshot."""
    return {
        "cpu_model": cpu.get("model"),
        "cores": cpu.get("cores"),
        "cpu_features": cpu.get("features"),
        "rustc": rustc,
        "calibration": calibration_medians(results),
    }


def of_snapshot(snapshot: dict[str, Any]) -> dict[str, Any] | None:
    """A snapshot's fingerprint; for one written before fingerprints, what it did record (CPU,
    rustc, the calibration rows) with `legacy` set, so a report can still say how it differs."""
    if snapshot.get("fingerprint"):
        return snapshot["fingerprint"]
    if "cpu" not in snapshot:
        return None
    legacy = fingerprint({**snapshot["cpu"], "features": None}, snapshot.get("rustc", "unknown"), snapshot.get("results", {}))
    return {**legacy, "legacy": True}


def _features(value: Any) -> str:
    return ", ".join(value) if value else "none"


def differences(current: dict[str, Any], other: dict[str, Any] | None) -> list[str]:
    """How the machine of `other` differs from `current`'s, one phrase each; [] = same machine."""
    if not other:
        return ["no machine fingerprint recorded (a snapshot from before fingerprints: unknown machine)"]
    found = []
    if other.get("legacy"):
        found.append("no machine fingerprint recorded (a snapshot from before fingerprints: unknown machine)")
    for key, what in (("cpu_model", "CPU"), ("cores", "cores"), ("rustc", "rustc")):
        if current.get(key) != other.get(key):
            found.append(f"{what} {other.get(key)!s} (this run: {current.get(key)!s})")
    mine, theirs = current.get("cpu_features"), other.get("cpu_features")
    if mine is None or theirs is None:
        if not other.get("legacy"):
            found.append("CPU features unknown on one side")
    elif mine != theirs:
        missing = sorted(set(mine) - set(theirs))
        extra = sorted(set(theirs) - set(mine))
        parts = ([f"lacks {_features(missing)}"] if missing else []) + ([f"adds {_features(extra)}"] if extra else [])
        found.append("CPU features " + "; ".join(parts))
    cal_mine, cal_theirs = current.get("calibration") or {}, other.get("calibration") or {}
    shared = sorted(set(cal_mine) & set(cal_theirs))
    if not shared:
        found.append("no calibration kernel in common")
    for kernel in shared:
        old, new = cal_theirs[kernel], cal_mine[kernel]
        if old > 0 and abs(new / old - 1) > CALIBRATION_TOLERANCE:
            found.append(
                f"calibration `{kernel}` {new / old - 1:+.1%} this run (more than "
                f"{CALIBRATION_TOLERANCE:.0%} apart)"
            )
    return found


def summary(fp: dict[str, Any] | None) -> str:
    """One line naming a fingerprint's machine."""
    if not fp:
        return "unknown machine (no fingerprint)"
    return f"{fp.get('cpu_model')}, {fp.get('cores')} cores, features {_features(fp.get('cpu_features'))}; {fp.get('rustc')}"
