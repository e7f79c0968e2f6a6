"""Tests of scripts/wal_frames.py on a real SQLite WAL."""

from __future__ import annotations

import contextlib
import io
import sqlite3
import struct
import sys
import tempfile
import unittest
from pathlib import Path

import wal_frames


def _wal_with_commits(db: Path, commits: int) -> None:
    """Leaves `db`'s WAL holding `commits` committed inserts (no checkpoint)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    for i in range(commits):
        conn.execute("INSERT INTO t VALUES (?, randomblob(100))", (i,))
    # Copy the WAL before close: the last connection's close checkpoints
    # and deletes it.
    wal = Path(str(db) + "-wal").read_bytes()
    conn.close()
    Path(str(db) + "-wal").write_bytes(wal)


class CommitsInWal(unittest.TestCase):
    def test_counts_one_transaction_per_commit(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "d.sqlite"
            _wal_with_commits(db, 5)
            commits = wal_frames.commits_in_wal(Path(str(db) + "-wal").read_bytes())
            # CREATE TABLE, then five inserts.
            self.assertEqual(len(commits), 6)
            self.assertTrue(all(commits))

    def test_stops_at_a_torn_frame_and_on_short_input(self) -> None:
        self.assertEqual(wal_frames.commits_in_wal(b""), [])
        header = struct.pack(">IIII", 0x377F0682, 3007000, 4096, 0) + b"saltsalt" + bytes(8)
        # A frame whose salt differs from the header's is not read.
        frame = struct.pack(">II", 2, 2) + b"otherslt" + bytes(8) + bytes(4096)
        self.assertEqual(wal_frames.commits_in_wal(header + frame), [])

    def test_main_attributes_frames_to_the_table(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "d.sqlite"
            _wal_with_commits(db, 20)
            out = io.StringIO()
            argv = sys.argv
            sys.argv = ["wal_frames.py", str(db), "10"]
            try:
                with contextlib.redirect_stdout(out):
                    self.assertEqual(wal_frames.main(), 0)
            finally:
                sys.argv = argv
            text = out.getvalue()
            self.assertIn("the last 10:", text)
            # Each insert rewrites the table's one leaf page.
            self.assertRegex(text, r"\n  t +1\.00\n")


if __name__ == "__main__":
    unittest.main()
