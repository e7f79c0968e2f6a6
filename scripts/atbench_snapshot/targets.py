"""Which bench targets and rows a change can reach: files -> crates -> bench targets -> rows.

Owns the mapping the paired re-measurement (drive.py) uses to choose what to measure again:
  - the workspace, from `cargo metadata --no-deps`: each member's directory and its normal
    (non-dev) dependencies on other members, and the bench targets of the `benches` package;
  - the crates a bench target links *and uses*: every member named as a path (`store::`,
    `use repo::…`) in the target's own sources (benches/benches/<target>/) or in the harness
    modules it uses (benches/src/: the core ones every target runs through, those it names as
    `benches::inputs`, and those these name as `crate::corpus`), closed over the members'
    dependencies. Linking alone would say "every crate" (the benches package depends on all of
    them); naming is what the code uses. A harness file reaches the targets that use its module;
  - a change: the files that differ between the baseline commit and the working tree
    (uncommitted and untracked files included), sorted into the crates they belong to, the
    harness (benches/src), a target's bench code (benches/benches/<target>), build inputs that
    reach every binary (Cargo.lock, the root's and benches' Cargo.toml, rust-toolchain.toml,
    .cargo/, data/; a crate's own Cargo.toml belongs to the crate), and
    the rest (docs, scripts, bench-history, CI, fuzz, peers/, units.toml), which reaches none;
  - per target: touched or "code unchanged", and why; per row of a touched target: reachable,
    or a control. A control is a row whose code the change cannot reach: a calibration kernel
    (unless benches/src/calibrate.rs changed), a row of a third-party implementation (a
    dependency of the benches package such as `sonic-rs` or `crc32fast`, a `raw` client, a
    node peer of units.toml `peers`) unless the target's bench code or a harness module it
    uses changed, or
    a row of ours whose area crate (`codec.*` -> crates/codec, with its dependencies) the
    change did not touch.

Pure functions over data, except `workspace` and `changed_files`, which ask cargo and git.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .criterion import split_id
from .proc import git, run
from .registry import Group

HARNESS = "benches/src/"
TARGET_CODE = "benches/benches/"
# Files that reach every bench binary: dependency versions, features, toolchain, the dataset.
BUILD_INPUTS = ("Cargo.lock", "Cargo.toml", "rust-toolchain.toml", "rust-toolchain", "benches/Cargo.toml", "benches/build.rs")
BUILD_INPUT_DIRS = (".cargo/", "data/")
# Directories whose files reach no bench binary, whatever their extension.
INERT_DIRS = ("scripts/", "bench-history/", ".ci/", "fuzz/", "peers/", "docs/", ".github/")
INERT_FILES = ("benches/units.toml",)
RAW_CLIENTS = {"raw"}
# Harness modules every target runs through (the wrapper, presets, registry, kernels, sidecars).
CORE_MODULES = {"lib", "target", "config", "registry", "calibrate", "sidecar", "paired"}
CALIBRATION_MODULE = "calibrate"
HARNESS_PACKAGE = "benches"


@dataclass(frozen=True)
class Workspace:
    """The members that matter here: {crate: directory relative to the root}, {crate: its
    normal dependencies on members}, and {bench target: its source directory relative to the
    root}, plus the third-party dependency names of the benches package."""

    crate_dirs: dict[str, str]
    crate_deps: dict[str, set[str]]
    bench_dirs: dict[str, str]
    third_party: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Change:
    """The files of a diff, sorted: {crate: [its files]}, harness files, {target: its bench
    code files}, build inputs, and files that reach no binary."""

    crates: dict[str, list[str]]
    harness: list[str]
    target_code: dict[str, list[str]]
    build_inputs: list[str]
    inert: list[str]

    @property
    def empty(self) -> bool:
        return not (self.crates or self.harness or self.target_code or self.build_inputs)


def _relative(path: str, root: Path) -> str:
    try:
        return PurePosixPath(Path(path).resolve().relative_to(root.resolve())).as_posix()
    except ValueError:
        return path


def parse_workspace(metadata: dict, root: Path) -> Workspace:
    """A Workspace from `cargo metadata --no-deps --format-version 1` output."""
    members = {p["name"]: p for p in metadata["packages"]}
    # The bench targets: the `benches` package's, or, in a workspace without one (the scripts'
    # fixture bench), every member's, each member then being a crate too.
    harness = HARNESS_PACKAGE if HARNESS_PACKAGE in members else None
    crate_dirs: dict[str, str] = {}
    crate_deps: dict[str, set[str]] = {}
    bench_dirs: dict[str, str] = {}
    third_party: set[str] = set()
    for name, package in members.items():
        directory = _relative(str(Path(package["manifest_path"]).parent), root)
        normal = {d["name"] for d in package["dependencies"] if d.get("kind") in (None, "build")}
        if harness in (None, name):
            for target in package["targets"]:
                if "bench" in target["kind"]:
                    bench_dirs[target["name"]] = _relative(str(Path(target["src_path"]).parent), root)
            third_party |= {d["name"] for d in package["dependencies"] if d["name"] not in members}
        if name == harness:
            continue
        crate_dirs[name] = directory
        crate_deps[name] = {d for d in normal if d in members and d != name}
    return Workspace(crate_dirs, crate_deps, bench_dirs, third_party)


def workspace(root: Path) -> Workspace:
    """The workspace at `root` (runs `cargo metadata --no-deps`, which needs no network)."""
    text = run(["cargo", "metadata", "--no-deps", "--format-version", "1"], root, what="cargo metadata")
    return parse_workspace(json.loads(text), root)


def closure(ws: Workspace, crates: set[str]) -> set[str]:
    """`crates` and every member they depend on, transitively."""
    seen: set[str] = set()
    todo = list(crates)
    while todo:
        crate = todo.pop()
        if crate in seen or crate not in ws.crate_dirs:
            continue
        seen.add(crate)
        todo.extend(ws.crate_deps.get(crate, ()))
    return seen


def named_crates(ws: Workspace, sources: list[str]) -> set[str]:
    """The members named as a path (`crate::`) in Rust source texts."""
    idents = {name.replace("-", "_"): name for name in ws.crate_dirs}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, idents))) + r")::") if idents else None
    found: set[str] = set()
    for text in sources:
        if pattern is not None:
            found.update(idents[m] for m in pattern.findall(text))
    return found


def _sources(directory: Path) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(directory.rglob("*.rs"))]


def harness_module(path: str) -> str:
    """The top-level module of the harness a file under benches/src/ belongs to ("lib" for
    lib.rs): benches/src/inputs.rs -> inputs, benches/src/peers/store_inputs.rs -> peers."""
    first = path[len(HARNESS) :].split("/", 1)[0]
    return first.removesuffix(".rs")


def _harness_sources(root: Path) -> dict[str, list[str]]:
    modules: dict[str, list[str]] = {}
    directory = root / HARNESS
    if directory.is_dir():
        for path in sorted(directory.rglob("*.rs")):
            rel = PurePosixPath(path.relative_to(root)).as_posix()
            modules.setdefault(harness_module(rel), []).append(path.read_text(encoding="utf-8", errors="replace"))
    return modules


def _referenced_modules(texts: list[str], prefix: str, known: set[str]) -> set[str]:
    """Harness modules named as `prefix::module` or in `prefix::{a, b::c}`."""
    found: set[str] = set()
    for text in texts:
        found.update(m for m in re.findall(rf"\b{prefix}::(\w+)", text) if m in known)
        for inner in re.findall(rf"\b{prefix}::\{{([^}}]*)\}}", text):
            found.update(w for w in re.findall(r"(\w+)", inner) if w in known)
    return found


def target_modules(ws: Workspace, root: Path) -> dict[str, set[str]]:
    """{bench target: the harness modules it uses}: CORE_MODULES, those it names
    (`benches::inputs`), and those these name in turn (`crate::corpus`)."""
    harness = _harness_sources(root)
    known = set(harness)
    uses: dict[str, set[str]] = {}
    for target, directory in sorted(ws.bench_dirs.items()):
        found = (CORE_MODULES & known) | _referenced_modules(_sources(root / directory), HARNESS_PACKAGE, known)
        todo = list(found)
        while todo:
            for module in _referenced_modules(harness.get(todo.pop(), []), "crate", known) - found:
                found.add(module)
                todo.append(module)
        uses[target] = found
    return uses


def target_crates(ws: Workspace, root: Path, modules: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """{bench target: the members it uses}: named in its own sources or in the harness modules
    it uses, closed over dependencies."""
    modules = modules if modules is not None else target_modules(ws, root)
    harness = _harness_sources(root)
    return {
        target: closure(
            ws,
            named_crates(ws, _sources(root / directory))
            | named_crates(ws, [t for m in modules.get(target, ()) for t in harness.get(m, [])]),
        )
        for target, directory in sorted(ws.bench_dirs.items())
    }


def changed_files(root: Path, base_sha: str) -> list[str]:
    """Files that differ between `base_sha` and the working tree at `root`: committed,
    uncommitted and untracked (not ignored)."""
    diff = git(root, "diff", "--name-only", "--no-renames", base_sha, "--").splitlines()
    untracked = git(root, "ls-files", "--others", "--exclude-standard").splitlines()
    return sorted({line for line in diff + untracked if line})


def _prefix(directory: str) -> str:
    """A directory relative to the root as a path prefix ("" for the root itself)."""
    directory = directory.strip("/")
    return "" if directory in ("", ".") else directory + "/"


def classify(ws: Workspace, files: list[str]) -> Change:
    """Sort a diff's files (paths relative to the root) by what they can reach."""
    crates: dict[str, list[str]] = {}
    harness: list[str] = []
    target_code: dict[str, list[str]] = {}
    build_inputs: list[str] = []
    inert: list[str] = []
    crate_by_dir = sorted(((_prefix(d), c) for c, d in ws.crate_dirs.items()), key=lambda i: -len(i[0]))
    target_by_dir = {d.rstrip("/") + "/": t for t, d in ws.bench_dirs.items()}
    for path in files:
        if path in BUILD_INPUTS or path.startswith(BUILD_INPUT_DIRS):
            build_inputs.append(path)
        elif path.endswith(".md") or path in INERT_FILES or path.startswith(INERT_DIRS):
            inert.append(path)
        elif path.startswith(HARNESS):
            harness.append(path)
        elif path.startswith(TARGET_CODE):
            owner = next((t for d, t in target_by_dir.items() if path.startswith(d)), None)
            if owner is None:  # benches/benches/<file> outside any target's directory
                harness.append(path)
            else:
                target_code.setdefault(owner, []).append(path)
        else:
            crate = next((c for d, c in crate_by_dir if path.startswith(d)), None)
            if crate is None:
                inert.append(path)
            else:
                crates.setdefault(crate, []).append(path)
    return Change(crates, harness, target_code, build_inputs, inert)


def _listed(files: list[str], prefix: str = "", limit: int = 3) -> str:
    names = sorted(f[len(prefix) :] if prefix and f.startswith(prefix) else f for f in files)
    shown = ", ".join(names[:limit])
    return shown + (f", … {len(names) - limit} more" if len(names) > limit else "")


def harness_reaching(change: Change, modules: set[str], kernels: bool = True) -> list[str]:
    """The changed harness files in `modules` (the calibration kernels' only when `kernels`)."""
    return [
        f for f in change.harness
        if harness_module(f) in modules and (kernels or harness_module(f) != CALIBRATION_MODULE)
    ]


def touched_targets(
    ws: Workspace, uses: dict[str, set[str]], change: Change, modules: dict[str, set[str]] | None = None
) -> dict[str, str | None]:
    """{target: why it is re-measured, or None when its code is unchanged}. `modules`: the
    harness modules each target uses (None: every harness file reaches every target)."""
    touched: dict[str, str | None] = {}
    for target in sorted(ws.bench_dirs):
        reasons = []
        if change.build_inputs:
            reasons.append(f"build inputs changed ({_listed(change.build_inputs)})")
        harness = change.harness if modules is None else harness_reaching(change, modules.get(target, set()))
        if harness:
            reasons.append(f"the harness changed ({_listed(harness, HARNESS)})")
        if target in change.target_code:
            reasons.append(f"its bench code changed ({_listed(change.target_code[target], TARGET_CODE)})")
        for crate in sorted(set(change.crates) & uses.get(target, set())):
            directory = _prefix(ws.crate_dirs[crate])
            reasons.append(f"{directory.rstrip('/') or crate} changed ({_listed(change.crates[crate], directory)})")
        touched[target] = "; ".join(reasons) if reasons else None
    return touched


def forced(ws: Workspace, uses: dict[str, set[str]], targets: list[str]) -> Change:
    """The change to assume when targets are measured by hand on code the change does not reach:
    every crate those targets use, as if it had changed (so their rows of ours are compared,
    and kernels, third-party rows and peers stay controls)."""
    crates = sorted(set().union(*(uses.get(t, set()) for t in targets))) if targets else []
    # A target that uses no member (a standalone bench) has only its own code to reach.
    own = {t: [f"{ws.bench_dirs[t]}/ (measured by hand)"] for t in targets if not uses.get(t) and t in ws.bench_dirs}
    return Change({c: [f"{ws.crate_dirs[c]}/ (measured by hand)"] for c in crates}, [], own, [], [])


def _third_party(implementation: str, ws: Workspace, group: Group | None) -> bool:
    base = implementation.split(".", 1)[0]
    if base in RAW_CLIENTS or (group is not None and base in group.peers):
        return True
    candidates = {base, base.removesuffix("-crate")}
    names = {n.replace("_", "-") for n in ws.third_party}
    return any(c.replace("_", "-") in names for c in candidates)


def is_control(
    full_id: str,
    target: str,
    ws: Workspace,
    uses: dict[str, set[str]],
    change: Change,
    registry: dict[str, Group],
    modules: dict[str, set[str]] | None = None,
) -> bool:
    """Whether the change cannot reach this row of `target` (see the module docstring)."""
    group, implementation, _tier = split_id(full_id)
    if change.build_inputs:
        return False
    if group.startswith("calibrate."):
        return not any(harness_module(f) == CALIBRATION_MODULE for f in change.harness)
    used = modules.get(target, set()) if modules is not None else {harness_module(f) for f in change.harness}
    bench_code = bool(harness_reaching(change, used, kernels=False)) or target in change.target_code
    if bench_code:
        return False
    if _third_party(implementation, ws, registry.get(group)):
        return True
    area = group.split(".", 1)[0]
    reach = closure(ws, {area}) if area in ws.crate_dirs else uses.get(target, set())
    return not (reach & set(change.crates))


def targets_of_group(group: str, registry: dict[str, Group], known: list[str]) -> list[str]:
    """The bench targets that run `group` (units.toml `target`: one, several, or "*")."""
    entry = registry.get(group)
    if entry is None:
        return []
    if entry.target.strip() == "*":
        return list(known)
    return [t.strip() for t in entry.target.split(",") if t.strip() in known]
