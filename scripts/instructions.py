#!/usr/bin/env python3
"""Instruction counts of the deterministic hot paths, and the CI gate on them.

    python3 scripts/instructions.py install
    python3 scripts/instructions.py run [--out FILE]
    python3 scripts/instructions.py check [--counts FILE] [--threshold PCT]
    python3 scripts/instructions.py update [--counts FILE]
    python3 scripts/instructions.py compare A B

`install` puts the gungraun-runner the workspace pins (Cargo.toml's `gungraun = "=X"`) into
target/tools/bin/ with `cargo install --locked`, unless that version is there already.
`run` installs if needed, runs `cargo bench --features instructions --bench instructions`
(gungraun on valgrind's callgrind; the workspace crates with codegen-units=1, see `run`) with its own GUNGRAUN_HOME under target/instructions/, and
writes the counts ({id: instructions}) to --out (default target/instructions/counts.json).
Ids follow benches/benches/instructions/main.rs: function `f`, case `impl__tier` is
`instructions.f/impl/tier`, `_` standing for `.` in impl and for `-` in tier; every id must be
registered in benches/units.toml (group `instructions.f`, impl in its `compare`).

`check` runs (or reads --counts) and compares with bench-history/instructions.json, whose
entries are keyed by this machine's code-path CPU features (different features run different
code). It prints every id's change and fails (exit 1) when one grew by more than the threshold
(default 1 %), or when ids were added or removed without `update`. On features the file has no
entry for, it records the counts there and says so instead of failing. `update` rewrites the
entry for this machine's features. `compare A B` prints both runs' counts and exits 1 unless
they are identical. Bad arguments or a failed build exit 2 with one line.
Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from atbench_snapshot import machine, proc  # noqa: E402
from atbench_snapshot.registry import RegistryError, load_registry  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "bench-history" / "instructions.json"
THRESHOLD_PCT = 1.0
BENCH = "instructions"
FEATURES = "instructions"
# Built with one codegen unit each (see `run`).
WORKSPACE_PACKAGES = ("codec", "convert", "datagen", "repo", "segment", "store", "benches")


class UsageError(Exception):
    """A bad argument or a failed step: one line, exit 2."""


def pinned_version(root: Path = ROOT) -> str:
    """The gungraun version Cargo.toml pins (`gungraun = "=X"`)."""
    manifest = tomllib.loads((root / "Cargo.toml").read_text(encoding="utf-8"))
    spec = manifest.get("workspace", {}).get("dependencies", {}).get("gungraun")
    version = spec.get("version") if isinstance(spec, dict) else spec
    if not isinstance(version, str) or not version.startswith("="):
        raise UsageError('Cargo.toml must pin gungraun exactly (gungraun = "=X.Y.Z")')
    return version[1:]


def runner_path(root: Path = ROOT) -> Path:
    return root / "target" / "tools" / "bin" / "gungraun-runner"


def install(root: Path = ROOT) -> Path:
    """The pinned gungraun-runner under target/tools, installed if missing or another version."""
    version = pinned_version(root)
    runner = runner_path(root)
    if runner.exists():
        out = proc.output([str(runner), "--version"], root)
        if out is not None and version in out:
            return runner
    print(f"instructions: installing gungraun-runner {version} into target/tools", file=sys.stderr)
    cmd = ["cargo", "install", "gungraun-runner", "--version", f"={version}", "--locked",
           "--root", str(root / "target" / "tools")]
    if proc.call(cmd, root) != 0:
        raise UsageError(f"cargo install gungraun-runner {version} failed")
    return runner


# ---- ids and summaries ----------------------------------------------------------------------

_CASE = re.compile(r"^(?P<impl>[A-Za-z0-9_]+?)__(?P<tier>[A-Za-z0-9_]+)$")


def atbench_id(function: str, case: str | None) -> str:
    """`instructions.<function>/<impl>/<tier>` of a gungraun function and case id."""
    if not case:
        raise UsageError(f"benchmark {function} has no case id (#[bench::impl__tier])")
    match = _CASE.match(case)
    if not match:
        raise UsageError(f"case {function}::{case} is not impl__tier")
    impl = match["impl"].replace("_", ".")
    tier = match["tier"].replace("_", "-")
    return f"{BENCH}.{function}/{impl}/{tier}"


def _instructions(summary: dict[str, Any]) -> int:
    """The callgrind `Ir` (instructions executed) of a summary's first profile: its total's
    `metrics.Ir.values.new`."""
    try:
        value = summary["profiles"][0]["data"]["total"]["metrics"]["Ir"]["values"]["new"]
    except (KeyError, IndexError, TypeError) as error:
        raise UsageError(f"summary of {summary.get('module_path')} has no Ir: {error!r}") from error
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(f"summary of {summary.get('module_path')}: Ir is {value!r}, not an integer")
    return value


def read_summaries(home: Path) -> dict[str, int]:
    """{atbench id: instructions} from every summary.json gungraun wrote under `home`."""
    counts: dict[str, int] = {}
    for path in sorted(home.rglob("summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        full_id = atbench_id(summary["function_name"], summary.get("id"))
        if full_id in counts:
            raise UsageError(f"two benchmarks map to {full_id}")
        counts[full_id] = _instructions(summary)
    if not counts:
        raise UsageError(f"no gungraun summaries under {home}")
    return counts


def check_registered(counts: dict[str, int], root: Path = ROOT) -> None:
    """Every counted id's group is in units.toml with its implementation compared."""
    warnings: list[str] = []
    try:
        registry = load_registry(root / "benches" / "units.toml", warnings)
    except RegistryError as error:
        raise UsageError(str(error)) from error
    for full_id in counts:
        group, impl = full_id.split("/")[:2]
        spec = registry.get(group)
        if spec is None or spec.target != BENCH or impl not in spec.compare:
            raise UsageError(f"{full_id} is not registered in benches/units.toml for target {BENCH}")


def cargo_config() -> list[str]:
    """The `--config` arguments of the counted build (also `cargo-config`, which .ci/run gives
    its smoke run so that the gate reuses that release build instead of rebuilding).

    One codegen unit per workspace crate: with several, an edit anywhere in a crate can move
    other functions between units and change what LLVM inlines (repo's DAG-CBOR decode count
    fell 1.6 % after an edit to its MST code only). One unit makes that rarer, not
    impossible. Dependencies keep the profile's default, so their artifacts are shared with
    the other bench builds.
    """
    args: list[str] = []
    for package in WORKSPACE_PACKAGES:
        args += ["--config", f"profile.bench.package.{package}.codegen-units=1"]
    return args


def run(root: Path = ROOT, out: Path | None = None) -> dict[str, int]:
    runner = install(root)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    home = root / "target" / "instructions" / f"run-{stamp}"
    env = dict(os.environ)
    env["GUNGRAUN_RUNNER"] = str(runner)
    env["GUNGRAUN_HOME"] = str(home)
    env["PATH"] = f"{runner.parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = ["cargo", "bench", "--features", FEATURES, "--bench", BENCH, *cargo_config()]
    cmd += ["--", "--save-summary=json", "--nocapture=stderr"]
    print(f"instructions: {' '.join(cmd)} (GUNGRAUN_HOME={home})", file=sys.stderr)
    if proc.call(cmd, root, env) != 0:
        raise UsageError("cargo bench --bench instructions failed")
    counts = read_summaries(home)
    check_registered(counts, root)
    target = out or root / "target" / "instructions" / "counts.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"instructions: {len(counts)} counts in {target}", file=sys.stderr)
    return counts


# ---- the committed counts -------------------------------------------------------------------

def features_key(features: list[str] | None) -> str:
    """The history key of a feature list: the features joined by `+` ("none" / "unknown")."""
    if features is None:
        return "unknown"
    return "+".join(features) if features else "none"


def load_history(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"schema": 1, "threshold_pct": THRESHOLD_PCT, "entries": {}}
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != 1 or not isinstance(data.get("entries"), dict):
        raise UsageError(f"{path}: not an instructions history (schema 1)")
    return data


def _git_head(root: Path) -> str:
    out = proc.output(["git", "rev-parse", "--short=12", "HEAD"], root)
    return (out or "").strip() or "unknown"


def _tool_version(cmd: list[str]) -> str:
    out = (proc.output(cmd, ROOT) or "").strip()
    return out.splitlines()[0] if out else "unknown"


def entry_for(counts: dict[str, int], root: Path, features: list[str] | None) -> dict[str, Any]:
    """One features key's entry: the counts, and what took them (`commit` is HEAD when they
    were counted; the working tree may have been ahead of it, as when a change updates its
    own counts)."""
    return {
        "cpu_features": features,
        "rustc": _tool_version(["rustc", "--version"]),
        "valgrind": _tool_version(["valgrind", "--version"]),
        "commit": _git_head(root),
        "recorded": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "counts": dict(sorted(counts.items())),
    }


def write_history(path: Path, history: dict[str, Any]) -> None:
    history["entries"] = dict(sorted(history["entries"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(history, indent=2) + "\n", encoding="utf-8")


def delta_pct(old: int, new: int) -> float:
    return 0.0 if old == new else (new - old) / old * 100.0 if old else float("inf")


def compare_counts(committed: dict[str, int], counts: dict[str, int], threshold: float,
                   labels: tuple[str, str] = ("committed", "this run")) -> tuple[list[str], list[str]]:
    """(report lines, failures) of a run against committed counts: an id that grew past
    `threshold` percent, or that only one side has, is a failure."""
    lines = [f"{'id':58} {labels[0]:>14} {labels[1]:>14} {'change':>9}"]
    failures: list[str] = []
    for full_id in sorted(set(committed) | set(counts)):
        old, new = committed.get(full_id), counts.get(full_id)
        if old is None:
            lines.append(f"{full_id:58} {'-':>14} {new:>14,} {'new':>9}")
            failures.append(f"{full_id} has no committed count (run `update`)")
        elif new is None:
            lines.append(f"{full_id:58} {old:>14,} {'-':>14} {'gone':>9}")
            failures.append(f"{full_id} no longer runs (run `update`)")
        else:
            change = delta_pct(old, new)
            flag = "  GREW" if change > threshold else ""
            lines.append(f"{full_id:58} {old:>14,} {new:>14,} {change:>+8.2f}%{flag}")
            if change > threshold:
                failures.append(f"{full_id} grew {change:+.2f}% (> {threshold:g}%)")
    return lines, failures


def check(counts: dict[str, int], history_path: Path, root: Path, features: list[str] | None,
          threshold: float) -> int:
    history = load_history(history_path)
    key = features_key(features)
    entry = history["entries"].get(key)
    if entry is None:
        history["entries"][key] = entry_for(counts, root, features)
        write_history(history_path, history)
        print(f"instructions: no committed counts for features {key}: recorded {len(counts)} "
              f"counts in {history_path.relative_to(root) if history_path.is_relative_to(root) else history_path} "
              "(commit them to gate this machine); not a failure")
        return 0
    for tool, now in (("rustc", _tool_version(["rustc", "--version"])),
                      ("valgrind", _tool_version(["valgrind", "--version"]))):
        if entry.get(tool) not in (None, now):
            print(f"instructions: warning: committed counts were taken with {entry.get(tool)}, "
                  f"this run with {now}")
    lines, failures = compare_counts(entry["counts"], counts, threshold)
    print(f"instructions: features {key}, committed at {entry.get('commit')}")
    print("\n".join(lines))
    if failures:
        print("instructions: FAIL: " + "; ".join(failures))
        return 1
    print(f"instructions: ok, {len(counts)} ids, none grew more than {threshold:g}%")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install the pinned gungraun-runner into target/tools")
    sub.add_parser("cargo-config", help="print the counted build's --config arguments, one a line")
    p_run = sub.add_parser("run", help="count and write the counts")
    p_run.add_argument("--out", type=Path)
    for name in ("check", "update"):
        p = sub.add_parser(name)
        p.add_argument("--counts", type=Path, help="counts from an earlier `run` instead of running")
        p.add_argument("--history", type=Path, default=HISTORY)
        p.add_argument("--features", help="a features key instead of this machine's (tests)")
        if name == "check":
            p.add_argument("--threshold", type=float,
                           help="percent growth that fails (default: the history's threshold_pct, 1)")
    p_cmp = sub.add_parser("compare", help="two runs' counts; exit 1 unless identical")
    p_cmp.add_argument("a", type=Path)
    p_cmp.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "cargo-config":
            print("\n".join(cargo_config()))
            return 0
        if args.command == "install":
            print(install())
            return 0
        if args.command == "run":
            run(out=args.out)
            return 0
        if args.command == "compare":
            a, b = (read_counts(p) for p in (args.a, args.b))
            lines, _ = compare_counts(a, b, 0.0, (args.a.name, args.b.name))
            print("\n".join(lines))
            same = a == b
            print("instructions: identical" if same else "instructions: the runs differ")
            return 0 if same else 1
        counts = read_counts(args.counts) if args.counts else run()
        features = args.features.split("+") if args.features else machine.cpu_features()
        if args.command == "check":
            threshold = args.threshold
            if threshold is None:
                threshold = float(load_history(args.history).get("threshold_pct", THRESHOLD_PCT))
            return check(counts, args.history, ROOT, features, threshold)
        history = load_history(args.history)
        history["entries"][features_key(features)] = entry_for(counts, ROOT, features)
        write_history(args.history, history)
        print(f"instructions: wrote {len(counts)} counts for {features_key(features)} to {args.history}")
        return 0
    except UsageError as error:
        print(f"instructions: error: {error}", file=sys.stderr)
        return 2


def read_counts(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UsageError(f"{path}: {error}") from error
    if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
        raise UsageError(f"{path}: not a counts file ({{id: instructions}})")
    return data


if __name__ == "__main__":
    sys.exit(main())
