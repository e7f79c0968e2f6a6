"""The two builds a paired re-measurement compares: the baseline commit and the working tree.

Owns:
  - the baseline's checkout: one detached worktree, <target>/paired/base, moved to each
    baseline commit in turn (a dirty one is refused, never overwritten). One path keeps cargo's
    fingerprints honest: they are relative to the workspace root, so two checkouts sharing a
    target dir could take each other's compiled crates; one checkout that moves between
    commits is what cargo expects;
  - its target dir, <target>/paired/target-base, kept between runs. On first use it is seeded
    from the working tree's `release/` (the registry's crates are the same) and every file of
    the checkout is then marked newer than any copied artifact, so cargo rebuilds the
    workspace's own crates and reuses the rest;
  - building the selected bench executables of a tree (`cargo bench --no-run
    --message-format=json`, the same features and profile for both sides) and copying them
    out, so a later build cannot replace a binary that is being measured;
  - whether a build has the driven mode (benches/src/paired.rs): its executables carry the
    protocol's prefix.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .proc import ProcError, git, run


def git_or_none(root: Path, *args: str) -> str | None:
    try:
        return git(root, *args)
    except ProcError:
        return None

DRIVEN_MARKER = b"atbench-paired "


class BuildError(Exception):
    """A tree could not be checked out or built."""


@dataclass(frozen=True)
class Build:
    """One side: its name ("base" or "head"), commit, tree, executables per target, and whether
    they speak the driven protocol."""

    name: str
    sha: str
    tree: Path
    executables: dict[str, Path]
    driven: bool

    @property
    def bench_dir(self) -> Path:
        """Cargo runs a bench executable from its package directory."""
        return self.tree / "benches" if (self.tree / "benches" / "Cargo.toml").is_file() else self.tree


def resolve(root: Path, ref: str) -> str:
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except ProcError:
        raise BuildError(f"{ref!r} is not a commit in {root}") from None


def base_worktree(root: Path, sha: str, paired_dir: Path) -> Path:
    """The clean detached worktree of `sha` at paired_dir/base, made or moved."""
    path = paired_dir / "base"
    if path.exists() and git_or_none(path, "rev-parse", "--git-dir") is None:
        shutil.rmtree(path)  # left by a repository that is gone (a test's throwaway one)
    try:
        if path.exists():
            if git(path, "status", "--porcelain", "--untracked-files=no"):
                raise BuildError(f"the worktree {path} has uncommitted changes: commit, clean or remove it")
            git(path, "checkout", "--quiet", "--detach", sha)
            return path
        git(root, "worktree", "prune")
        paired_dir.mkdir(parents=True, exist_ok=True)
        git(root, "worktree", "add", "--quiet", "--detach", str(path), sha)
    except ProcError as error:
        raise BuildError(str(error)) from error
    return path


def seed_target_dir(head_target: Path, base_target: Path, base_tree: Path) -> bool:
    """Seed a missing base target dir from the head's `release/`; True when it did."""
    source = head_target / "release"
    if base_target.exists() or not source.is_dir():
        return False
    shutil.copytree(source, base_target / "release", symlinks=True)
    now = time.time() + 2  # strictly newer than anything just copied
    for directory, dirs, files in os.walk(base_tree):
        dirs[:] = [d for d in dirs if d not in (".git", "target")]
        for name in files:
            try:
                os.utime(os.path.join(directory, name), (now, now))
            except OSError:
                pass
    return True


def bench_targets(tree: Path, exclude: set[str]) -> list[str]:
    """Every bench target of the tree's workspace, less `exclude`."""
    metadata = json.loads(run(["cargo", "metadata", "--no-deps", "--format-version", "1"], tree, what="cargo metadata"))
    names = {t["name"] for p in metadata["packages"] for t in p["targets"] if "bench" in t["kind"]}
    return sorted(names - exclude)


def build(name: str, sha: str, tree: Path, targets: list[str], features: str, target_dir: Path, dest: Path) -> Build:
    """Build `targets` in `tree` into `target_dir`, copy the executables to `dest`."""
    command = ["cargo", "bench", "--no-run", "--message-format=json", "--features", features]
    for target in targets:
        command += ["--bench", target]
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir)}
    try:
        output = run(command, tree, env, what=f"cargo bench --no-run in {tree}")
    except ProcError as error:
        raise BuildError(str(error)) from error
    found: dict[str, Path] = {}
    for line in output.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") == "compiler-artifact" and "bench" in message["target"]["kind"]:
            if message["target"]["name"] in targets and message.get("executable"):
                found[message["target"]["name"]] = Path(message["executable"])
    missing = sorted(set(targets) - set(found))
    if missing:
        raise BuildError(f"cargo built no executable for {', '.join(missing)} in {tree}")
    dest.mkdir(parents=True, exist_ok=True)
    copies = {}
    for target, path in found.items():
        copies[target] = dest / target
        shutil.copy2(path, copies[target])
    driven = all(DRIVEN_MARKER in path.read_bytes() for path in copies.values())
    return Build(name, sha, tree, copies, driven)
