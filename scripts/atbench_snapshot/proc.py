"""The one way the scripts run a child process and wait for it.

Owns: running a command to completion with its output captured (`run`) or shown (`call`),
and turning a failure
(cannot start, non-zero exit, timeout) into a ProcError whose message names the step and
the last line of its stderr. `output` is the tolerant form for probes that may fail
(no git, no rustc): it answers None instead. Long-lived, driven children (the paired
re-measurement's bench processes) are started in drive.py, not here.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path


class ProcError(Exception):
    """A command could not start, failed, or ran out of time."""


def run(
    command: list[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    what: str = "",
    timeout: float | None = None,
) -> str:
    """The stdout of `command` run in `cwd`; ProcError when it cannot start or fails."""
    name = what or shlex.join(command)
    try:
        done = subprocess.run(
            command, cwd=cwd, env=dict(env) if env is not None else None, capture_output=True, text=True,
            timeout=timeout, check=False,
        )
    except OSError as error:
        raise ProcError(f"cannot run {command[0]}: {error}") from error
    except subprocess.TimeoutExpired as error:
        raise ProcError(f"{name} took longer than {timeout:g} s") from error
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ProcError(f"{name} failed: {last}")
    return done.stdout


def call(command: list[str], cwd: Path, env: Mapping[str, str] | None = None) -> int:
    """Run `command` with the terminal's stdout and stderr (a long build or install whose
    progress the user watches); its exit status. ProcError when it cannot start."""
    try:
        return subprocess.run(command, cwd=cwd, env=dict(env) if env is not None else None, check=False).returncode
    except OSError as error:
        raise ProcError(f"cannot run {command[0]}: {error}") from error


def output(command: list[str], cwd: Path, timeout: float = 60) -> str | None:
    """The stdout of `command`, or None when it cannot run, fails or times out."""
    try:
        return run(command, cwd, timeout=timeout)
    except ProcError:
        return None


def git(root: Path, *args: str) -> str:
    """`git -C root ARGS`, stripped; ProcError on failure."""
    return run(["git", "-C", str(root), *args], root, what=f"git {args[0]}").strip()
