"""The paired re-measurement, one engine with two entry points (bench_snapshot.py, bench_ab.py).

Owns the plan and its run: the baseline commit checked out and built beside the working tree
(builds.py), the change between them mapped to the bench targets and rows it can reach
(targets.py), the selected ids of each target measured in pairs (drive.py), and the verdicts
with the controls' floor (pairing.py). The caller says which targets to measure:
  - bench_snapshot.py: the targets the change touched that have ids in this snapshot, plus
    any named with --remeasure;
  - bench_ab.py: the targets named with --bench (all by default).
A target measured on code the change does not reach is measured as if every crate it uses had
changed (targets.forced): its rows of ours are compared, kernels, peers and third-party rows
are its controls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import builds, drive, history, kinds, pairing, targets
from .criterion import split_id
from .proc import ProcError, git
from .registry import Group

NOT_CRITERION = {"instructions"}  # callgrind counts, not Criterion timings


class RemeasureError(Exception):
    """The re-measurement could not run: a bad ref, a failed build, a broken process."""


@dataclass
class Plan:
    """What a change reaches: {target: why re-measured or None}, the sorted change."""

    base_sha: str
    head_sha: str
    dirty: bool
    files: list[str]
    change: targets.Change
    touched: dict[str, str | None]
    uses: dict[str, set[str]]
    workspace: targets.Workspace
    modules: dict[str, set[str]] | None = None  # harness modules per target
    workspace_root: Path | None = None  # where units.toml's [kinds] is read


@dataclass
class Result:
    """A finished re-measurement: the outcome, per-target notes and modes, ids left unpaired."""

    plan: Plan
    measured_targets: dict[str, str]  # target -> why
    outcome: pairing.Outcome
    modes: dict[str, str]
    unpaired: dict[str, list[str]]
    seconds: dict[str, float]
    pairs: int
    skipped: dict[str, str] = field(default_factory=dict)  # touched target -> why not measured
    extended: list[str] = field(default_factory=list)  # ids that got more pairs (undecided)

    def record(self, baseline_file: str | None) -> dict[str, Any]:
        """The snapshot's "paired" key (/work/notes/paired_schema.md)."""
        target_notes = {}
        for target, why in sorted(self.plan.touched.items()):
            if target in self.measured_targets:
                target_notes[target] = {"remeasured": True, "why": self.measured_targets[target],
                                        "mode": self.modes.get(target), "seconds": round(self.seconds.get(target, 0), 1),
                                        "unpaired": self.unpaired.get(target, [])}
            elif target in self.skipped:
                target_notes[target] = {"remeasured": False, "why": self.skipped[target]}
            else:
                target_notes[target] = {"remeasured": False, "why": "code unchanged"}
        return {
            "baseline": {"snapshot": baseline_file, "commit": self.plan.base_sha},
            "head": {"commit": self.plan.head_sha, "dirty": self.plan.dirty},
            "pairs": self.pairs,
            "targets": target_notes,
            "changed_files": self.plan.files,
            "extended": self.extended,
            "sequential": {"stage": pairing.STAGE, "max_pairs": pairing.DEFAULT_MAX_PAIRS,
                           "false_positive_rate_pct": round(pairing.false_positive_rate() * 100, 2)},
            **pairing.record(self.outcome),
        }


def plan(root: Path, base_ref: str) -> Plan:
    """The change between `base_ref` and the working tree at `root`, mapped to bench targets."""
    try:
        base_sha = builds.resolve(root, base_ref)
        head_sha = builds.resolve(root, "HEAD")
        dirty = bool(git(root, "status", "--porcelain"))
        files = targets.changed_files(root, base_sha)
        ws = targets.workspace(root)
    except (builds.BuildError, ProcError) as error:
        raise RemeasureError(str(error)) from error
    ws_benches = {t: d for t, d in ws.bench_dirs.items() if t not in NOT_CRITERION}
    ws = targets.Workspace(ws.crate_dirs, ws.crate_deps, ws_benches, ws.third_party)
    modules = targets.target_modules(ws, root)
    uses = targets.target_crates(ws, root, modules)
    change = targets.classify(ws, files)
    touched = targets.touched_targets(ws, uses, change, modules)
    return Plan(base_sha, head_sha, dirty, files, change, touched, uses, ws, modules, root)


def change_for(p: Plan, target: str) -> targets.Change:
    """The change a target's rows are judged against: the real one when it reaches the
    target, else every crate the target uses (measured by hand)."""
    return p.change if p.touched.get(target) else targets.forced(p.workspace, p.uses, [target])


def control_rule(p: Plan, target: str, registry: dict[str, Group]):
    change = change_for(p, target)
    return lambda full_id: targets.is_control(full_id, target, p.workspace, p.uses, change, registry, p.modules)


def ids_of_target(results: dict[str, Any], target: str, registry: dict[str, Group], known: list[str]) -> list[str]:
    """The ids of `results` that `target` runs (units.toml `target`; "*" runs everywhere)."""
    return sorted(i for i in results if target in targets.targets_of_group(split_id(i)[0], registry, known))


def build_both(
    root: Path, p: Plan, target_list: list[str], features: str, target_dir: Path, log=drive.progress
) -> tuple[builds.Build, builds.Build]:
    """The baseline's and the working tree's executables of `target_list`."""
    paired_dir = target_dir / "paired"
    try:
        tree = builds.base_worktree(root, p.base_sha, paired_dir)
        base_target = paired_dir / "target-base"
        if builds.seed_target_dir(target_dir, base_target, tree):
            log(f"seeded {base_target} from {target_dir / 'release'} (the workspace's crates rebuild)")
        log(f"building the baseline ({p.base_sha[:12]}) in {tree}: {', '.join(target_list)}")
        base = builds.build("base", p.base_sha, tree, target_list, features, base_target,
                            paired_dir / "bin" / f"base-{p.base_sha[:12]}")
        log(f"building the working tree ({p.head_sha[:12]}{', dirty' if p.dirty else ''}): {', '.join(target_list)}")
        head = builds.build("head", p.head_sha, root, target_list, features, target_dir,
                            paired_dir / "bin" / f"head-{p.head_sha[:12]}")
    except builds.BuildError as error:
        raise RemeasureError(str(error)) from error
    return base, head


def execute(
    p: Plan,
    base: builds.Build,
    head: builds.Build,
    selections: dict[str, drive.Selection],
    why: dict[str, str],
    settings: drive.Settings,
    scratch: Path,
    minimum: float = pairing.DEFAULT_MINIMUM,
    regex: str | None = None,
    skipped: dict[str, str] | None = None,
    kind_of=None,
    max_pairs: int | None = None,
) -> Result:
    """Measure every selected target in pairs and judge the rows; rows left undecided
    (pairing.undecided) get pairing.STAGE more pairs at a time, up to `max_pairs` in all
    (default pairing.DEFAULT_MAX_PAIRS; `settings.pairs` or less: no extension)."""
    measured: list[pairing.Measured] = []
    modes: dict[str, str] = {}
    unpaired: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    for target, selection in selections.items():
        try:
            done = drive.measure_target(target, base, head, selection, settings, scratch / target, regex)
        except drive.DriveError as error:
            raise RemeasureError(f"{target}: {error}") from error
        measured += done.measured
        modes[target], unpaired[target], seconds[target] = done.mode, done.unpaired, done.seconds
        drive.progress(f"{target}: {len(done.measured)} ids paired in {done.seconds:.0f} s ({done.mode})")
    if kind_of is None:
        kind_of = kinds.load(p.workspace_root / "benches" / "units.toml").of if p.workspace_root else None
    budget = pairing.DEFAULT_MAX_PAIRS if max_pairs is None else max_pairs
    measured, extended = _extend(measured, base, head, selections, settings, scratch, minimum, kind_of, budget,
                                 seconds)
    outcome = pairing.analyse(measured, minimum, kind_of, extended)
    result = Result(p, why, outcome, modes, unpaired, seconds, settings.pairs, dict(skipped or {}))
    result.extended = sorted(extended)
    return result


def _extend(measured, base, head, selections, settings, scratch, minimum, kind_of, budget, seconds):
    """(the rows with their extra pairs, the ids extended): while some rows are undecided and
    the budget allows, STAGE more pairs of just those rows, target by target."""
    extended: set[str] = set()
    pairs = settings.pairs
    while pairs + pairing.STAGE <= budget:
        outcome = pairing.analyse(measured, minimum, kind_of, extended)
        todo = {
            (r.target, r.id) for r in outcome.rows
            if not r.control and pairing.undecided(r.ratios, r.floor or outcome.floor, r.noise)
            and len(r.ratios) == pairs
        }
        if not todo:
            break
        by_target: dict[str, set[str]] = {}
        for target, full_id in todo:
            by_target.setdefault(target, set()).add(full_id)
        more: dict[tuple[str, str], pairing.Measured] = {}
        for target, ids in sorted(by_target.items()):
            selection = selections[target]
            narrowed = drive.Selection(ids.__contains__, selection.control, selection.base_name, selection.head_name,
                                       sorted(ids))
            stage = drive.Settings(pairing.STAGE, settings.quick, settings.env, settings.head_env)
            drive.progress(f"{target}: {len(ids)} undecided id(s): {pairing.STAGE} more pairs each")
            try:
                done = drive.measure_target(target, base, head, narrowed, stage,
                                            scratch / f"{target}-more-{pairs}")
            except drive.DriveError as error:
                raise RemeasureError(f"{target}: {error}") from error
            seconds[target] = seconds.get(target, 0.0) + done.seconds
            more.update({(target, m.id): m for m in done.measured})
        merged = []
        for m in measured:
            extra = more.get((m.target, m.id))
            if extra is not None:
                m = pairing.Measured(m.id, m.target, m.control, m.base_ns + extra.base_ns, m.head_ns + extra.head_ns,
                                     m.kind)
                extended.add(m.id)
            merged.append(m)
        measured = merged
        pairs += pairing.STAGE
    return measured, extended


def renaming(history_dir: Path, baseline_results: dict[str, Any] | None):
    """(head_name, base_name) functions: renames.json forwards, the baseline's ids backwards."""
    renames = history.load_renames(history_dir / "renames.json")
    backwards = {}
    for old in baseline_results or {}:
        backwards[history.renamed_id(old, renames)] = old
    return (lambda i: history.renamed_id(i, renames)), (lambda i: backwards.get(i, i))
