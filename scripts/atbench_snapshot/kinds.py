"""The kind of work of every id: what bounds it (units.toml `[kinds]`).

Kinds: cpu, memory, io (I/O and fsync), network (network and processes), threads. A key of
`[kinds]` is a glob (`*`, `?`): without `/` it matches the group of an id, with `/` the whole
id. An id pattern beats a group pattern; among patterns of one sort the one with the most
literal (non-wildcard) characters wins, ties by the pattern's text. An id no pattern matches
has no kind (None): the snapshot warns, and scripts/tests/test_kinds.py fails on it.

The paired re-measurement (pairing.py) takes an id's floor from the controls of its own kind,
so a CPU-bound row is held to the noise of the CPU kernels, not of an fsync.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path

KINDS = ("cpu", "memory", "io", "network", "threads")


class KindsError(Exception):
    """`[kinds]` is malformed."""


@dataclass(frozen=True)
class Kinds:
    """The `[kinds]` table: (pattern, kind) pairs in the order they are tried."""

    patterns: tuple[tuple[str, str], ...]

    def of(self, full_id: str) -> str | None:
        group = full_id.split("/", 1)[0]
        for pattern, kind in self.patterns:
            subject = full_id if "/" in pattern else group
            if fnmatch.fnmatchcase(subject, pattern):
                return kind
        return None


def _precedence(pattern: str) -> tuple[int, int, str]:
    literal = sum(1 for c in pattern if c not in "*?")
    return (0 if "/" in pattern else 1, -literal, pattern)


def parse(table: object) -> Kinds:
    if not isinstance(table, dict):
        raise KindsError("units.toml: `kinds` must be a table of \"pattern\" = \"kind\"")
    for pattern, kind in table.items():
        if kind not in KINDS:
            raise KindsError(f"units.toml: [kinds] {pattern!r} = {kind!r}: the kind must be one of {', '.join(KINDS)}")
        if not pattern or pattern.count("/") > 2:
            raise KindsError(f"units.toml: [kinds] {pattern!r} is not a group or id pattern")
    return Kinds(tuple(sorted(table.items(), key=lambda item: _precedence(item[0]))))


def load(path: Path) -> Kinds:
    """The `[kinds]` of the units.toml at `path` (empty when the file or the table is absent)."""
    if not path.is_file():
        return Kinds(())
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise KindsError(f"{path}: {error}") from error
    return parse(document.get("kinds", {}))


def unclassified(ids, kinds: Kinds) -> list[str]:
    return sorted(i for i in ids if kinds.of(i) is None)
