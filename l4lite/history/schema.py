"""Schema and connection handling of the history store (SQLite, stdlib ``sqlite3``).

The schema is versioned with ``PRAGMA user_version`` and changed only by appending a migration to
``MIGRATIONS``: a store written by an older l4lite is upgraded in place when it is opened, and a store written by
a newer l4lite is refused instead of being misread. The DDL of every past version stays here verbatim so that the
tests can build an old store and migrate it.

Concurrency: the store runs in WAL mode (readers never block the writer), every connection has a busy timeout,
and every write is one ``BEGIN IMMEDIATE`` transaction, which takes the write lock up front. A deferred
transaction that reads and then writes can fail with ``SQLITE_BUSY`` without waiting when another process
committed in between; taking the lock first makes the second writer wait for the first instead. Migrations run in
the same kind of transaction and re-read the version after taking the lock, so two processes opening a new store
at once migrate it exactly once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from l4lite.errors import L4Error

# Version 1: jobs (healthy baselines and analysed jobs), their templates, suspects and evidence.
V1: tuple[str, ...] = (
    """CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL CHECK (kind IN ('healthy', 'analysis')),
        key TEXT NOT NULL,
        path TEXT NOT NULL,
        recorded_at REAL NOT NULL,
        start_time REAL,
        end_time REAL,
        lines_read INTEGER NOT NULL DEFAULT 0 CHECK (lines_read >= 0),
        status TEXT,
        category TEXT,
        phase TEXT,
        failure_time REAL,
        summary TEXT,
        top_node TEXT
    )""",
    "CREATE INDEX jobs_kind_key ON jobs (kind, key)",
    "CREATE TABLE templates (template_id TEXT PRIMARY KEY, template TEXT NOT NULL) WITHOUT ROWID",
    """CREATE TABLE job_templates (
        job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        template_id TEXT NOT NULL REFERENCES templates (template_id),
        count INTEGER NOT NULL CHECK (typeof(count) = 'integer' AND count >= 0),
        PRIMARY KEY (job_id, template_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE suspects (
        job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        node TEXT NOT NULL,
        score REAL NOT NULL,
        category TEXT,
        reasons TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (job_id, position)
    )""",
    "CREATE INDEX suspects_node ON suspects (node)",
    """CREATE TABLE evidence (
        job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        template_id TEXT NOT NULL,
        role TEXT NOT NULL,
        rule TEXT,
        node TEXT,
        file TEXT,
        line INTEGER,
        text TEXT,
        PRIMARY KEY (job_id, position)
    )""",
)

# Version 2: the fault library, stable job ids for export/import, job facts, the store's own settings.
V2: tuple[str, ...] = (
    "ALTER TABLE jobs ADD COLUMN uid TEXT",
    "UPDATE jobs SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL",
    "CREATE UNIQUE INDEX jobs_uid ON jobs (uid)",
    "ALTER TABLE jobs ADD COLUMN info TEXT NOT NULL DEFAULT '{}'",
    "ALTER TABLE jobs ADD COLUMN fingerprint TEXT",
    "ALTER TABLE jobs ADD COLUMN matched_fault INTEGER",
    "CREATE INDEX jobs_path ON jobs (kind, path)",
    """CREATE TABLE faults (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        uid TEXT NOT NULL UNIQUE,
        job_id INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
        confirmed_at REAL NOT NULL,
        category TEXT NOT NULL,
        cause TEXT NOT NULL,
        node TEXT,
        key TEXT,
        origin TEXT NOT NULL DEFAULT 'local'
    )""",
    "CREATE UNIQUE INDEX faults_job ON faults (job_id) WHERE job_id IS NOT NULL",
    """CREATE TABLE fault_templates (
        fault_id INTEGER NOT NULL REFERENCES faults (id) ON DELETE CASCADE,
        template_id TEXT NOT NULL REFERENCES templates (template_id),
        PRIMARY KEY (fault_id, template_id)
    ) WITHOUT ROWID""",
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)

# MIGRATIONS[i] takes a store from version i to version i + 1. Append only; never edit a released step.
MIGRATIONS: tuple[tuple[str, ...], ...] = (V1, V2)
SCHEMA_VERSION = len(MIGRATIONS)

DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a writer waits for another process's transaction before giving up


def connect(path: Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """Open (creating if needed) the store at ``path`` in WAL mode and bring its schema up to date."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise L4Error(f"{path}: cannot create the history store folder: {exc.strerror or exc}") from None
    try:
        # isolation_level=None: the module never opens transactions behind our back; we issue BEGIN ourselves.
        conn = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise L4Error(f"{path}: cannot open the history store: {exc}") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        _enable_wal(conn, path, busy_timeout)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL: a crash can lose the last commit, not corrupt
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
            raise _busy_error(exc, path) from None
        raise L4Error(f"{path}: not a usable l4lite history store: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection, path: Path, busy_timeout: float) -> None:
    """Switch to WAL; the switch needs a moment of exclusive access, so retry while another process has it."""
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise L4Error(f"{path}: history store is locked by another process") from None
            time.sleep(0.02)
    if str(mode).lower() != "wal":
        raise L4Error(f"{path}: the history store cannot use WAL mode (journal mode {mode}); use a local disk")


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: Path, target: int = SCHEMA_VERSION) -> int:
    """Apply the missing migrations up to ``target`` in one write transaction; return the version reached."""
    if target > SCHEMA_VERSION:
        raise ValueError(f"unknown schema version {target}")
    current = schema_version(conn)
    _check_not_newer(current, path)
    if current >= target:
        return current
    with write_transaction(conn, path):
        current = schema_version(conn)  # another process may have migrated while we waited for the lock
        _check_not_newer(current, path)
        for version in range(current, target):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        if current < target:
            conn.execute(f"PRAGMA user_version = {int(target)}")
    return max(current, target)


def _check_not_newer(version: int, path: Path) -> None:
    if version > SCHEMA_VERSION:
        raise L4Error(
            f"{path}: history store has schema version {version}, newer than this l4lite supports "
            f"({SCHEMA_VERSION}); upgrade l4lite"
        )


@contextmanager
def write_transaction(conn: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction: all of its writes land, or none do."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise _busy_error(exc, path) from None
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        conn.execute("ROLLBACK")
        raise _busy_error(exc, path) from None


@contextmanager
def read_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A deferred transaction so that several reads see one snapshot (WAL readers do not block writers)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def _busy_error(exc: sqlite3.OperationalError, path: Path) -> Exception:
    if "locked" in str(exc) or "busy" in str(exc):
        return L4Error(f"{path}: history store stayed locked by another process; try again")
    return exc
