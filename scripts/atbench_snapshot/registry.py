"""The registry of units of work, `benches/units.toml`.

Owns: parsing and validating the `[groups."<area>.<operation>"]` tables (target, unit,
throughput, compare, probe, calibration, peers, floor_probes) and deciding each result's role:
  "compare"       the group is registered, not a probe, and the implementation is in `compare`:
                  the row goes into the same-run comparison table of its group and tier;
  "probe"         the group has `probe = true`, or the implementation is not in `compare`:
                  an adjacent probe, listed apart;
  "unregistered"  the group is not in units.toml: listed under a warning, never compared.

and the id grammar `<area>.<operation>/<implementation>[.<variant>]/<tier>` (check_id). The
Rust registry (benches/src/registry.rs) is the authority; these rules are the same, and both
test suites check them against one list of valid and invalid ids, benches/tests/id_grammar.toml.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THROUGHPUT_KINDS = ("bytes", "elements", "none")
KEYS = {"target", "unit", "throughput", "compare", "probe", "calibration", "peers", "floor_probes"}
LOWER = re.compile(r"[a-z0-9_.-]+")
TIER = re.compile(r"[A-Za-z0-9_.-]+")


class RegistryError(Exception):
    """units.toml is malformed."""


@dataclass(frozen=True)
class Group:
    name: str
    target: str
    unit: str
    throughput: str
    compare: tuple[str, ...]
    probe: bool
    calibration: str | None = None
    # {peer implementation: {"same_as": [ours...], "note": "..."}} (units.toml `peers`)
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # {baseline implementation: its floor probe's implementation} (units.toml `floor_probes`)
    floor_probes: dict[str, str] = field(default_factory=dict)


def _check_chars(part: str, what: str, pattern: re.Pattern[str]) -> None:
    if not part:
        raise RegistryError(f"empty {what}")
    if not pattern.fullmatch(part):
        bad = next(c for c in part if not pattern.fullmatch(c))
        raise RegistryError(f"{what} {part!r} has {bad!r}, outside the id grammar")


def check_group(name: str) -> None:
    """`<area>.<operation>` in [a-z0-9_.-]; raises RegistryError."""
    _check_chars(name, "group", LOWER)
    area, dot, operation = name.partition(".")
    if not dot or not area or not operation:
        raise RegistryError(f"group {name!r} is not <area>.<operation>")


def check_implementation(name: str) -> None:
    """An implementation with its variant, in [a-z0-9_.-]; raises RegistryError."""
    _check_chars(name, "implementation", LOWER)


def check_tier(tier: str) -> None:
    """A tier such as 16KiB, 100k, callers-10, in [A-Za-z0-9_.-]; raises RegistryError."""
    _check_chars(tier, "tier", TIER)


def check_id(full_id: str) -> None:
    """A whole benchmark id: group/implementation[/tier]; raises RegistryError naming the fault."""
    parts = full_id.split("/")
    if len(parts) < 2 or len(parts) > 3:
        raise RegistryError(f"id {full_id!r} is not <group>/<implementation>[/<tier>]")
    check_group(parts[0])
    check_implementation(parts[1])
    if len(parts) == 3:
        check_tier(parts[2])


def _group(name: str, table: Any) -> Group:
    if not isinstance(table, dict):
        raise RegistryError(f'[groups."{name}"] is not a table')
    for field in ("target", "unit", "throughput"):
        if not isinstance(table.get(field), str) or not table[field]:
            raise RegistryError(f'[groups."{name}"] needs a non-empty string `{field}`')
    if table["throughput"] not in THROUGHPUT_KINDS:
        raise RegistryError(
            f'[groups."{name}"] throughput must be one of {THROUGHPUT_KINDS}, not {table["throughput"]!r}'
        )
    compare = table.get("compare", [])
    if not isinstance(compare, list) or not all(isinstance(item, str) for item in compare):
        raise RegistryError(f'[groups."{name}"] compare must be a list of implementation names')
    probe = table.get("probe", False)
    if not isinstance(probe, bool):
        raise RegistryError(f'[groups."{name}"] probe must be true or false')
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise RegistryError(f'[groups."{name}"] has unknown keys: {", ".join(unknown)}')
    try:
        check_group(name)
        for implementation in compare:
            check_implementation(implementation)
    except RegistryError as error:
        raise RegistryError(f'[groups."{name}"]: {error}') from error
    if not table["unit"].strip():
        raise RegistryError(f'[groups."{name}"] has an empty unit')
    if not compare and not probe:
        raise RegistryError(f'[groups."{name}"] compares nothing and is not a probe')
    calibration = table.get("calibration")
    if calibration is not None and not isinstance(calibration, str):
        raise RegistryError(f'[groups."{name}"] calibration must name a calibrate.* group')
    peers = _peers(name, table.get("peers", {}), compare)
    floor_probes = _floor_probes(name, table.get("floor_probes", {}))
    return Group(
        name, table["target"], table["unit"], table["throughput"], tuple(compare), probe, calibration, peers, floor_probes
    )


def _floor_probes(name: str, table: Any) -> dict[str, str]:
    """`floor_probes = { "<baseline implementation>" = "<probe implementation>" }`: both names in
    the id grammar; the probe's rows are ids of the same group and tiers."""
    where = f'[groups."{name}"] floor_probes'
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise RegistryError(f'{where} must be a table of "baseline" = "probe" implementation names')
    for baseline, probe in table.items():
        try:
            check_implementation(baseline)
            check_implementation(probe)
        except RegistryError as error:
            raise RegistryError(f"{where}: {error}") from error
        if baseline == probe:
            raise RegistryError(f"{where}: {baseline!r} cannot be its own probe")
    return dict(table)


def _peers(name: str, table: Any, compare: list[str]) -> dict[str, dict[str, Any]]:
    """The `peers` table of a group: each peer listed in compare (itself or a variant), each
    `same_as` one of ours in compare, a one-line `note`."""
    if not isinstance(table, dict):
        raise RegistryError(f'[groups."{name}"] peers must be a table of peer tables')
    peers: dict[str, dict[str, Any]] = {}
    for peer, spec in table.items():
        where = f'[groups."{name}".peers."{peer}"]'
        if not isinstance(spec, dict) or set(spec) != {"same_as", "note"}:
            raise RegistryError(f"{where} needs exactly `same_as` and `note`")
        same_as, note = spec["same_as"], spec["note"]
        def ours(s: Any) -> bool:
            return isinstance(s, str) and any(c == s or c.startswith(s + ".") for c in compare)

        if not isinstance(same_as, list) or not all(ours(s) for s in same_as):
            raise RegistryError(f"{where} same_as must list implementations of compare")
        if not isinstance(note, str) or not note.strip():
            raise RegistryError(f"{where} needs a non-empty note")
        if not any(c == peer or c.startswith(peer + ".") for c in compare):
            raise RegistryError(f"{where}: the peer is not in compare")
        peers[peer] = {"same_as": list(same_as), "note": note}
    return peers


def parse_registry(text: str) -> dict[str, Group]:
    """Groups of a units.toml text, keyed by group name."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RegistryError(f"units.toml: {error}") from error
    groups = document.get("groups", {})
    if not isinstance(groups, dict):
        raise RegistryError("units.toml: `groups` must be a table of tables")
    registry = {name: _group(name, table) for name, table in sorted(groups.items())}
    for group in registry.values():
        kernel = group.calibration
        if kernel is not None and (kernel not in registry or not kernel.startswith("calibrate.")):
            raise RegistryError(f'[groups."{group.name}"] calibration {kernel!r} is not a registered calibrate.* group')
    return registry


def calibration_kernels(registry: dict[str, Group]) -> dict[str, str]:
    """{group: the calibration group it names}, for the groups that name one."""
    return {name: group.calibration for name, group in registry.items() if group.calibration}


def load_registry(path: Path, warnings: list[str]) -> dict[str, Group]:
    """The registry at `path`; an absent file is a warning and an empty registry."""
    if not path.is_file():
        warnings.append(f"{path} not found: every group is unregistered")
        return {}
    try:
        return parse_registry(path.read_text(encoding="utf-8"))
    except RegistryError as error:
        raise RegistryError(f"{path}: {error}") from error


def role(registry: dict[str, Group], group: str, implementation: str) -> str:
    """'compare', 'probe' or 'unregistered' (see the module docstring)."""
    entry = registry.get(group)
    if entry is None:
        return "unregistered"
    if entry.probe or implementation not in entry.compare:
        return "probe"
    return "compare"


def annotate(results: dict[str, dict[str, Any]], registry: dict[str, Group], warnings: list[str]) -> None:
    """Set each result's `unit` and `role`; warn on unregistered groups and on a throughput
    kind that differs from the one the registry declares."""
    for full_id, result in results.items():
        entry = registry.get(result["group"])
        result["unit"] = entry.unit if entry else None
        result["role"] = role(registry, result["group"], result["implementation"])
        if entry is None:
            continue
        measured = result["throughput"]["kind"] if result["throughput"] else "none"
        if measured != entry.throughput:
            warnings.append(f"{full_id}: Criterion throughput is {measured}, units.toml declares {entry.throughput}")
    unregistered = sorted({r["group"] for r in results.values() if r["role"] == "unregistered"})
    if unregistered:
        warnings.append(f"groups not in units.toml: {', '.join(unregistered)}")
