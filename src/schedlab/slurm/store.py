"""The service's state in one SQLite file: the SiteFactor last written to each job, every
decision (applied or only proposed), every node power action with its outcome, and small
settings such as the history cursor. Each cycle is one transaction, so a service killed at
any point restarts from the last whole cycle and repeats nothing it did."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

SCHEMA = """
CREATE TABLE IF NOT EXISTS factors (job_id TEXT PRIMARY KEY, factor INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
    cycle INTEGER NOT NULL, time REAL NOT NULL, job_id TEXT NOT NULL, rank INTEGER NOT NULL,
    old_factor INTEGER, new_factor INTEGER NOT NULL, applied INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS power (
    time REAL NOT NULL, node TEXT NOT NULL, action TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Store:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)  # explicit transactions below
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def factors(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT job_id, factor FROM factors"))

    def next_cycle(self) -> int:
        (last,) = self.db.execute("SELECT MAX(cycle) FROM decisions").fetchone()
        stored = self.get("cycle")
        return max(int(last) if last is not None else 0, int(stored) if stored else 0) + 1

    def record_cycle(self, cycle: int, now: float, rows: Iterable[tuple[str, int, int | None, int]], *,
                     applied: bool, gone: Iterable[str]) -> None:  # fmt: skip
        """One cycle's decisions (job, rank, old, new); with ``applied`` the factors written,
        and jobs no longer pending forgotten."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for job, rank, old, new in rows:
                self.db.execute("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (cycle, now, job, rank, old, new, int(applied)))  # fmt: skip
                if applied:
                    self.db.execute("INSERT OR REPLACE INTO factors VALUES (?, ?)", (job, new))
            if applied:
                self.db.executemany("DELETE FROM factors WHERE job_id = ?", [(j,) for j in gone])
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('cycle', ?)", (str(cycle),))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def power_intent(self, now: float, node: str, action: str) -> int:
        """Note a power action before it is taken; returns its row id."""
        cur = self.db.execute("INSERT INTO power VALUES (?, ?, ?, 'intended')", (now, node, action))
        assert cur.lastrowid is not None
        return cur.lastrowid

    def power_done(self, row: int, status: str) -> None:
        self.db.execute("UPDATE power SET status = ? WHERE rowid = ?", (status, row))

    def open_power_actions(self) -> list[tuple[int, str, str]]:
        """Power actions noted but not known to be done (the service stopped in between)."""
        return list(self.db.execute("SELECT rowid, node, action FROM power WHERE status = 'intended'"))

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def export(self, out_dir: Path) -> list[Path]:
        """``decisions.parquet`` and ``power.parquet``, each written whole and then renamed."""
        paths = []
        for table in ("decisions", "power"):
            frame = pd.read_sql_query(f"SELECT * FROM {table}", self.db)  # noqa: S608 - fixed table names
            path = out_dir / f"{table}.parquet"
            tmp = path.with_suffix(".parquet.tmp")
            frame.to_parquet(tmp, index=False)
            tmp.replace(path)
            paths.append(path)
        return paths
