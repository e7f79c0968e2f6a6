#!/usr/bin/env python3
"""Installs the Prefect server peer into target/prefect/venv.

prefect 3.9.1 and every distribution it needs are pinned with their hashes in
peers/prefect/requirements.lock. The wheels are downloaded once into
target/prefect/wheels (pip download --require-hashes; later runs find them
there), then installed offline with --no-deps --require-hashes. The venv is
rebuilt when the lock changes (its sha256 is stamped into the venv).

Used by `--bench appview` (the appview.rest peer rows, under BENCH_PEERS=1),
by `cargo test -p appview --test prefect_client`, and by .ci/run. Prints the
venv's python on success.

    python3 scripts/prefect_venv.py          # install when missing or stale
    python3 scripts/prefect_venv.py --check  # exit 1 unless installed and current
"""

import argparse
import hashlib
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "peers" / "prefect" / "requirements.lock"
BASE = ROOT / "target" / "prefect"
VENV = BASE / "venv"
WHEELS = BASE / "wheels"
STAMP = VENV / "atbench-lock.sha256"


def lock_digest() -> str:
    return hashlib.sha256(LOCK.read_bytes()).hexdigest()


def python() -> Path:
    return VENV / "bin" / "python"


def current() -> bool:
    return python().is_file() and STAMP.is_file() and STAMP.read_text().strip() == lock_digest()


def install() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"prefect 3.9.1 needs Python >= 3.11; this is {sys.version.split()[0]}")
    if VENV.exists():
        shutil.rmtree(VENV)
    WHEELS.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [str(python()), "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        pip + ["download", "--quiet", "--no-deps", "--require-hashes", "-r", str(LOCK), "-d", str(WHEELS)],
        check=True,
    )
    subprocess.run(
        pip
        + [
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--require-hashes",
            "--find-links",
            str(WHEELS),
            "-r",
            str(LOCK),
        ],
        check=True,
    )
    subprocess.run([str(python()), "-c", "import prefect.server.api.server, asyncpg, aiosqlite"], check=True)
    STAMP.write_text(lock_digest() + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the venv is installed and current")
    args = ap.parse_args()
    if args.check:
        if not current():
            print(f"{VENV}: not installed or stale (run python3 scripts/prefect_venv.py)", file=sys.stderr)
            return 1
    elif not current():
        install()
    print(python())
    return 0


if __name__ == "__main__":
    sys.exit(main())
