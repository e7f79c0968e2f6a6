"""bench-history/: snapshot files, finding the baseline, and id renames.

Owns:
  - file names `bench-<UTC as YYYYMMDDTHHMMSSZ>.{json,md}` and `latest.md`; a snapshot is
    never overwritten;
  - the baseline: the newest snapshot strictly older (by its file name's timestamp) than the
    one being written whose machine fingerprint matches (machine.py), or the newest snapshot
    whose `tag` equals `--against-tag`, or a file named with `--baseline`;
  - `renames.json`: {"old id": "new id", ...} applied to the baseline's ids before diffing.
    A key ending in "/" is a prefix rename: {"store.list_records/": "store.list_page/"}
    renames every id that starts with the key (a group, or a group/implementation pair);
    its value must end in "/" too. An exact entry wins over a prefix, a longer prefix over
    a shorter one, and renames chain (a -> b, b -> c takes a to c); a cycle is an error,
    and so is two old ids landing on one new id.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import machine
from .criterion import split_id

# 2 added `fingerprint` (machine.py); schema 1 snapshots stay readable as "unknown machine".
SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)
SNAPSHOT_NAME = re.compile(r"^bench-(\d{8}T\d{6}Z)\.json$")


class HistoryError(Exception):
    """bench-history holds something unusable, or the requested baseline does not exist."""


def stamp(moment: datetime) -> str:
    """The file-name timestamp of a UTC moment, e.g. 20261130T200000Z."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def snapshot_files(history_dir: Path) -> list[Path]:
    """Every bench-<UTC>.json in the directory, oldest first."""
    if not history_dir.is_dir():
        return []
    return sorted(p for p in history_dir.iterdir() if SNAPSHOT_NAME.match(p.name))


def load_snapshot(path: Path) -> dict[str, Any]:
    try:
        snapshot = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise HistoryError(f"cannot read snapshot {path}: {error}") from error
    if not isinstance(snapshot, dict) or snapshot.get("schema_version") not in READABLE_SCHEMAS:
        raise HistoryError(f"{path}: not a snapshot of schema version {' or '.join(map(str, READABLE_SCHEMAS))}")
    return snapshot


def earlier_snapshots(history_dir: Path, current_stamp: str) -> list[Path]:
    """The snapshots older than the one stamped `current_stamp`, newest first."""
    older = [p for p in snapshot_files(history_dir) if SNAPSHOT_NAME.match(p.name).group(1) < current_stamp]
    return older[::-1]


def previous_snapshot(history_dir: Path, current_stamp: str) -> Path | None:
    """The newest snapshot older than the one stamped `current_stamp`, if any."""
    older = earlier_snapshots(history_dir, current_stamp)
    return older[0] if older else None


def same_machine_snapshot(
    history_dir: Path, current_stamp: str, fingerprint: dict[str, Any]
) -> tuple[Path | None, Path | None, list[str]]:
    """(baseline, nearest, differences): the newest earlier snapshot whose machine matches
    `fingerprint` (machine.differences is empty), else None; the newest earlier snapshot and
    how its machine differs, for the report when there is no baseline."""
    older = earlier_snapshots(history_dir, current_stamp)
    for path in older:
        if not machine.differences(fingerprint, machine.of_snapshot(load_snapshot(path))):
            return path, older[0], []
    if not older:
        return None, None, []
    return None, older[0], machine.differences(fingerprint, machine.of_snapshot(load_snapshot(older[0])))


def tagged_snapshot(history_dir: Path, tag: str) -> Path:
    """The newest snapshot recorded with `tag`."""
    for path in reversed(snapshot_files(history_dir)):
        if load_snapshot(path).get("tag") == tag:
            return path
    raise HistoryError(f"no snapshot in {history_dir} is tagged {tag!r}")


def load_renames(path: Path) -> dict[str, str]:
    """renames.json, validated; {} when the file does not exist."""
    if not path.is_file():
        return {}
    try:
        renames = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise HistoryError(f"cannot read {path}: {error}") from error
    if not isinstance(renames, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in renames.items()):
        raise HistoryError(f'{path}: must be a JSON object of "old id": "new id" strings')
    for old, new in renames.items():
        if old.endswith("/") != new.endswith("/"):
            raise HistoryError(f"{path}: prefix rename {old!r} -> {new!r} needs a trailing '/' on both sides")
    return renames


def _rename_once(full_id: str, renames: dict[str, str]) -> str | None:
    if full_id in renames and not full_id.endswith("/"):
        return renames[full_id]
    prefixes = [old for old in renames if old.endswith("/") and full_id.startswith(old)]
    if not prefixes:
        return None
    longest = max(prefixes, key=len)
    return renames[longest] + full_id[len(longest) :]


def renamed_id(full_id: str, renames: dict[str, str]) -> str:
    """`full_id` after following every applicable rename."""
    seen = [full_id]
    while (following := _rename_once(seen[-1], renames)) is not None:
        if following in seen:
            raise HistoryError(f"renames.json has a cycle: {' -> '.join([*seen, following])}")
        seen.append(following)
    return seen[-1]


def apply_renames(results: dict[str, dict[str, Any]], renames: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Baseline results re-keyed by their renamed ids, with group/implementation/tier updated."""
    renamed: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    for old_id, result in results.items():
        new_id = renamed_id(old_id, renames)
        if new_id in renamed:
            raise HistoryError(f"renames map both {origin[new_id]!r} and {old_id!r} to {new_id!r}")
        group, implementation, tier = split_id(new_id)
        renamed[new_id] = {**result, "group": group, "implementation": implementation, "tier": tier}
        origin[new_id] = old_id
    return dict(sorted(renamed.items()))


def write_snapshot(
    history_dir: Path, file_stamp: str, snapshot: dict[str, Any], markdown: str, latest_markdown: str | None = None
) -> list[Path]:
    """Write bench-<stamp>.json, bench-<stamp>.md (`markdown`, the full page) and latest.md
    (`latest_markdown`, the reviewer's page; the full one when None); refuse to overwrite a
    snapshot."""
    history_dir.mkdir(parents=True, exist_ok=True)
    json_path = history_dir / f"bench-{file_stamp}.json"
    md_path = history_dir / f"bench-{file_stamp}.md"
    if json_path.exists() or md_path.exists():
        raise HistoryError(f"{json_path.name} already exists; snapshots are never overwritten")
    json_path.write_text(json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    latest = history_dir / "latest.md"
    md_path.write_text(markdown, encoding="utf-8")
    latest.write_text(markdown if latest_markdown is None else latest_markdown, encoding="utf-8")
    return [json_path, md_path, latest]
