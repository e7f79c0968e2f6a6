#!/usr/bin/env python3
"""WAL frames per commit, by table: where a store's commits write pages.

    python3 scripts/wal_frames.py <db-path> [last-commits]

Reads `<db>-wal` (the frames of its current generation, i.e. those whose
salt matches the header), splits them into transactions at each commit
frame, and maps every frame's page number to the table or index that owns
the page (SQLite's `dbstat`, read from a copy of the database with its WAL,
so the original is left as it is). Prints frames per commit over the last
N commits (default 1000), by owner. Pages that are not in any b-tree at the
end (freed since) count as `(free)`. See `crates/store/examples/profile.rs`
for keeping a WAL around.
"""
import collections
import os
import shutil
import sqlite3
import struct
import sys
import tempfile


def commits_in_wal(wal: bytes):
    """The page numbers each committed transaction of the WAL wrote."""
    if len(wal) < 32:
        return []
    page_size = struct.unpack(">I", wal[8:12])[0]
    salt = wal[16:24]
    off, current, commits = 32, [], []
    while off + 24 + page_size <= len(wal):
        header = wal[off : off + 24]
        if header[8:16] != salt:
            break
        page, db_size = struct.unpack(">II", header[:8])
        current.append(page)
        if db_size:
            commits.append(current)
            current = []
        off += 24 + page_size
    return commits


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    db = sys.argv[1]
    last = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    try:
        with open(db + "-wal", "rb") as f:
            commits = commits_in_wal(f.read())
    except OSError as e:
        print(f"cannot read the WAL: {e}")
        return 1
    if not commits:
        print("no committed frames in", db + "-wal")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "db")
        shutil.copyfile(db, copy)
        shutil.copyfile(db + "-wal", copy + "-wal")
        conn = sqlite3.connect(copy)
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat").fetchall())
        conn.close()
    chosen = commits[-last:]
    counts = collections.Counter(owner.get(p, "(free)") for c in chosen for p in c)
    n = len(chosen)
    print(f"{len(commits)} commits in the WAL; the last {n}:")
    print(f"frames per commit: {sum(counts.values()) / n:.2f}")
    for name, frames in counts.most_common():
        print(f"  {name:<24} {frames / n:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
