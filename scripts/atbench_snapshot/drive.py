"""Measuring the two builds of each selected id in pairs (the engine of bench_snapshot.py's
re-measurement and of bench_ab.py).

Owns the processes and the order of the measurements. Per target, two ways:

  driven    both builds have the driven mode (benches/src/paired.rs). One process per build
            stays alive for the whole target: each builds its fixtures once, as a normal run
            does, then stops at every benchmark and announces its id. For a selected id the
            two processes are measured alternately, `pairs` times, base-head then head-base,
            seconds apart; then both move on. An id only one build announces is left
            unpaired. Cost: two fixture builds, plus 2 x pairs short measurements per id.
  per-pair  a build without the driven mode (every baseline older than it). Each pair runs
            each build's executable once over the selected ids (a Criterion filter with the
            same short times), base first in odd pairs, head first in even ones. Cost: each
            run builds the target's fixtures again, so 2 x pairs fixture builds per target,
            and an id's two measurements are one target run apart, not seconds. live_backends
            always runs this way: its fixtures are shared database tables, which two live
            processes would trample.

What a pair compares is each side's fastest sample (ns per iteration, criterion.py's
fastest_sample_ns), not Criterion's median: on a shared machine a measurement only ever gets
slower, by however much the other processes took, so the least disturbed sample is the
estimate two builds can be held to. Each measurement writes Criterion's output under a scratch CRITERION_HOME and the
harness's sidecars under a scratch CARGO_TARGET_DIR, never into the target dir a snapshot
reads. Short times: the budget of a re-measured target is about twice its own run, and its
own run spends warm-up + measurement per id once where the pairs spend it 2 x pairs times.
Progress (target, id, pair k of n, time left) goes to stderr.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .builds import Build
from .criterion import CriterionError, fastest_sample_ns, read_fastest_dir, read_measurement
from .pairing import Measured
from .proc import ProcError, run

PREFIX = "atbench-paired "
PER_PAIR_TARGETS = {"live_backends"}
SAMPLES = 10
RESAMPLES = 1000
# (warm-up ms, measurement ms) of one side of one pair, by preset: with 5 pairs, 10 of them
# cost about what the preset's own warm-up + measurement (150 + 400 ms quick, 800 + 2000 ms
# full) costs once, plus the fixed cost of Criterion's analysis.
TIMES_MS = {"quick": (15, 45), "full": (80, 220)}


class DriveError(Exception):
    """A bench process failed or broke the protocol."""


@dataclass
class Selection:
    """What to measure in one target, in the head's id names.

    wanted(id): measure this id; base_name(id): the id the baseline build calls it (renames);
    control(id): the change cannot reach it; expected: the ids expected, for time left."""

    wanted: Callable[[str], bool]
    control: Callable[[str], bool]
    base_name: Callable[[str], str] = lambda i: i
    head_name: Callable[[str], str] = lambda i: i
    expected: list[str] | None = None


@dataclass
class Settings:
    pairs: int = 5
    quick: bool = False
    env: dict[str, str] = field(default_factory=dict)  # both builds
    head_env: dict[str, str] = field(default_factory=dict)  # the head build only (bench_ab --env-b)

    @property
    def times(self) -> tuple[int, int]:
        return TIMES_MS["quick" if self.quick else "full"]


def progress(text: str) -> None:
    print(f"paired: {text}", file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Eta:
    """Time left in a target from the measurements done so far."""

    def __init__(self, total: int | None) -> None:
        self.started = time.monotonic()
        self.total = total
        self.done = 0

    def left(self) -> str:
        if not self.total or not self.done:
            return "time left: estimating"
        per = (time.monotonic() - self.started) / self.done
        return f"about {_clock(per * max(0, self.total - self.done))} left"


def env_for(build: Build, settings: Settings, scratch: Path) -> dict[str, str]:
    env = {**os.environ, **settings.env}
    if settings.quick:
        env["BENCH_QUICK"] = "1"
    if build.name == "head":
        env.update(settings.head_env)
    env["CRITERION_HOME"] = str(scratch / "criterion")
    env["CARGO_TARGET_DIR"] = str(scratch / "target")  # the harness's sidecars and temp files
    env.pop("ATBENCH_PAIRED", None)
    return env


def _fastest(home: Path, full_id: str, cache: dict[str, Path]) -> float:
    """The fastest sample (ns per iteration) Criterion just wrote for `full_id` under `home`."""
    path = cache.get(full_id)
    if path is None:
        direct = home.joinpath(*full_id.split("/"), "new", "benchmark.json")
        candidates = [direct] if direct.is_file() else sorted(home.rglob("new/benchmark.json"))
        for candidate in candidates:
            try:
                if read_measurement(candidate)[0] == full_id:
                    path = cache[full_id] = candidate
                    break
            except CriterionError:
                continue
    if path is None:
        raise DriveError(f"Criterion wrote no estimates for {full_id} under {home}")
    try:
        return fastest_sample_ns(path)
    except CriterionError as error:
        raise DriveError(str(error)) from error


class DrivenProcess:
    """One build's executable in the driven mode: announcements in, commands out."""

    def __init__(self, build: Build, target: str, env: dict[str, str], scratch: Path) -> None:
        self.build = build
        self.home = Path(env["CRITERION_HOME"])
        self.cache: dict[str, Path] = {}
        scratch.mkdir(parents=True, exist_ok=True)
        self.log_path = scratch / "stderr.log"
        self.log: IO[str] = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        try:
            self.child = subprocess.Popen(
                [str(build.executables[target]), "--bench"],
                cwd=build.bench_dir,
                env={**env, "ATBENCH_PAIRED": "1"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                text=True,
                bufsize=1,
            )
        except OSError as error:
            self.log.close()
            raise DriveError(f"cannot start {build.executables[target]}: {error}") from error
        self.current: str | None = None
        self.seen: set[str] = set()

    def _event(self) -> dict:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            if line.startswith(PREFIX):
                try:
                    return json.loads(line[len(PREFIX) :])
                except json.JSONDecodeError as error:
                    raise DriveError(f"{self.build.name}: bad protocol line {line.strip()!r}") from error
        code = self.child.wait()
        tail = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise DriveError(f"{self.build.name} build's process ended (exit {code}) mid-run: {' | '.join(tail)}")

    def advance(self) -> str | None:
        """Wait for the next announced id (None when the target is done)."""
        event = self._event()
        if event.get("event") == "done":
            self.current = None
            return None
        if event.get("event") != "ready" or "id" not in event:
            raise DriveError(f"{self.build.name}: expected an id, got {event}")
        self.current = event["id"]
        self.seen.add(event["id"])
        return self.current

    def send(self, command: str) -> None:
        assert self.child.stdin is not None
        try:
            self.child.stdin.write(command + "\n")
            self.child.stdin.flush()
        except OSError as error:
            raise DriveError(f"{self.build.name} build's process stopped reading: {error}") from error

    def measure(self, warm_ms: int, measure_ms: int) -> float:
        assert self.current is not None
        self.send(f"measure {warm_ms} {measure_ms}")
        event = self._event()
        if event.get("event") != "measured" or event.get("id") != self.current:
            raise DriveError(f"{self.build.name}: measuring {self.current} answered {event}")
        return _fastest(self.home, self.current, self.cache)

    def close(self) -> None:
        if self.child.stdin:
            try:
                self.child.stdin.close()
            except OSError:
                pass
        try:
            self.child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
        if self.child.stdout:
            self.child.stdout.close()
        self.log.close()


@dataclass
class TargetResult:
    measured: list[Measured]
    unpaired: list[str]
    mode: str
    seconds: float


def _driven(
    target: str, base: Build, head: Build, selection: Selection, settings: Settings, scratch: Path
) -> TargetResult:
    started = time.monotonic()
    warm, measure = settings.times
    eta = Eta(len(selection.expected) * settings.pairs if selection.expected is not None else None)
    measured: list[Measured] = []
    unpaired: list[str] = []
    a = DrivenProcess(base, target, env_for(base, settings, scratch / "base"), scratch / "base")
    try:
        b = DrivenProcess(head, target, env_for(head, settings, scratch / "head"), scratch / "head")
    except DriveError:
        a.close()
        raise
    try:
        x, y = a.advance(), b.advance()
        passed_a: set[str] = set()  # head names of the ids each process has left behind
        passed_b: set[str] = set()
        expected = set(selection.expected) if selection.expected is not None else None

        def skip_a() -> str | None:
            passed_a.add(selection.head_name(x))
            a.send("next")
            return a.advance()

        def skip_b() -> str | None:
            passed_b.add(y)
            b.send("next")
            return b.advance()

        while x is not None or y is not None:
            hx = selection.head_name(x) if x is not None else None
            if hx is not None and not selection.wanted(hx):
                x = skip_a()
            elif y is not None and not selection.wanted(y):
                y = skip_b()
            elif hx == y:
                base_ns, head_ns = [], []
                for k in range(settings.pairs):
                    progress(f"{target}: {y}: pair {k + 1} of {settings.pairs}, {eta.left()}")
                    first, second = (a, b) if k % 2 == 0 else (b, a)
                    for process in (first, second):
                        value = process.measure(warm, measure)
                        (base_ns if process is a else head_ns).append(value)
                    eta.done += 1
                measured.append(Measured(y, target, selection.control(y), tuple(base_ns), tuple(head_ns)))
                x, y = skip_a(), skip_b()
            elif y is None or hx in passed_b or (expected is not None and hx not in expected):
                unpaired.append(hx)  # the head build is done with it, or never runs it
                x = skip_a()
            else:
                # The head build's id: the baseline has passed it, is done, or reaches the
                # two ids in the other order; either way this one stays unpaired.
                unpaired.append(y)
                y = skip_b()
    finally:
        a.close()
        b.close()
    return TargetResult(measured, sorted(set(unpaired)), "driven", time.monotonic() - started)


def filter_regex(ids: list[str]) -> str:
    """A Criterion filter that matches exactly these ids."""
    escaped = (re.sub(r"([.+*?()|\[\]{}^$\\])", r"\\\1", i) for i in sorted(ids))
    return "^(?:" + "|".join(escaped) + ")$"


def _one_run(build: Build, target: str, regex: str | None, env: dict[str, str], what: str) -> dict[str, float]:
    home = Path(env["CRITERION_HOME"])
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    warm, measure = TIMES_MS["quick" if env.get("BENCH_QUICK") == "1" else "full"]
    command = [
        str(build.executables[target]), "--bench", "--noplot",
        "--warm-up-time", f"{warm / 1000:g}", "--measurement-time", f"{measure / 1000:g}",
        "--sample-size", str(SAMPLES), "--nresamples", str(RESAMPLES),
    ] + ([regex] if regex else [])
    try:
        run(command, build.bench_dir, env, what=what)
        return read_fastest_dir(home)
    except ProcError as error:
        raise DriveError(str(error)) from error
    except CriterionError:
        return {}


def _per_pair(
    target: str, base: Build, head: Build, selection: Selection, settings: Settings, scratch: Path, regex: str | None
) -> TargetResult:
    started = time.monotonic()
    head_regex = filter_regex(selection.expected) if selection.expected else regex
    base_regex = filter_regex([selection.base_name(i) for i in selection.expected]) if selection.expected else regex
    eta = Eta(settings.pairs * 2)
    runs: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    for k in range(settings.pairs):
        order = (base, head) if k % 2 == 0 else (head, base)
        for build in order:
            progress(f"{target}: pair {k + 1} of {settings.pairs}: the {build.name} build's run, {eta.left()}")
            env = env_for(build, settings, scratch / build.name / f"pair-{k + 1}")
            medians = _one_run(build, target, base_regex if build.name == "base" else head_regex, env,
                               f"{build.name} {target} (pair {k + 1})")
            if build.name == "base":
                medians = {selection.head_name(i): v for i, v in medians.items()}
            runs[build.name].append({i: v for i, v in medians.items() if selection.wanted(i)})
            eta.done += 1
    both = set.intersection(*(set(r) for r in runs["base"] + runs["head"]))
    every = set().union(*(set(r) for r in runs["base"] + runs["head"]))
    measured = [
        Measured(i, target, selection.control(i), tuple(r[i] for r in runs["base"]), tuple(r[i] for r in runs["head"]))
        for i in sorted(both)
    ]
    return TargetResult(measured, sorted(every - both), "per-pair", time.monotonic() - started)


def measure_target(
    target: str,
    base: Build,
    head: Build,
    selection: Selection,
    settings: Settings,
    scratch: Path,
    regex: str | None = None,
) -> TargetResult:
    """Every selected id of `target` measured in pairs, and the ids left unpaired."""
    if scratch.exists():
        shutil.rmtree(scratch)
    if base.driven and head.driven and target not in PER_PAIR_TARGETS:
        mode = "driven: one live process per build"
        progress(f"{target}: {mode}, {settings.pairs} pairs per id")
        return _driven(target, base, head, selection, settings, scratch)
    why = "live backends" if target in PER_PAIR_TARGETS else "a build without the driven mode"
    progress(f"{target}: per-pair runs ({why}), {settings.pairs} pairs")
    return _per_pair(target, base, head, selection, settings, scratch, regex)
