"""Every answer of a served model, kept the moment it arrives: the score store of a model behind a server.

A local model's scores are recomputed from its files at will; a served model's answers cost requests, time and
often money, and the model behind a name can change. So the raw answers themselves are stored, one SQLite file per
endpoint in the score store (``<store>/served/<fingerprint>.sqlite``), each under the hash of its request (path and
JSON body; :func:`~stereoprobe.served.client.request_key`) with the model id and system fingerprint the server
reported and when it answered. Scores are computed from these answers when a report asks (cheap), so a changed
scoring rule never asks the server again, and a run killed mid-way resumes with what it has. The key is never
written: it is a header, not part of the body.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY, path TEXT NOT NULL, body TEXT NOT NULL, answer TEXT NOT NULL,
    model TEXT, system_fingerprint TEXT, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS facts (name TEXT PRIMARY KEY, value TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    at REAL NOT NULL, what TEXT NOT NULL, requests INTEGER, retries INTEGER, cached INTEGER,
    prompt_tokens INTEGER, completion_tokens INTEGER, models TEXT, fingerprints TEXT);
"""


class Journal:
    """The stored answers of one endpoint (module doc)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    @classmethod
    def of(cls, store, endpoint) -> "Journal":
        """The journal of ``endpoint`` in the score store ``store``."""
        return cls(Path(store.root) / "served" / f"{endpoint.fingerprint[:24]}.sqlite")

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        """The stored answers among ``keys``."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                rows = self._db.execute(f"SELECT key, answer FROM answers WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk).fetchall()
                out.update((k, json.loads(a)) for k, a in rows)
        return out

    def put(self, key: str, path: str, body: dict, answer: dict) -> None:
        """Store one answer (committed at once)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (key, path, json.dumps(body, sort_keys=True), json.dumps(answer),
                              answer.get("model"), answer.get("system_fingerprint"), time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def fact(self, name: str) -> dict | None:
        """A stored fact about the endpoint (what its first-use probe found), or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM facts WHERE name = ?", (name,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_fact(self, name: str, value: dict) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO facts VALUES (?, ?, ?)", (name, json.dumps(value), time.time()))

    def record_run(self, what: str, usage) -> None:
        """Keep what one run asked (requests, tokens, the model ids and system fingerprints reported)."""
        with self._lock:
            self._db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (time.time(), what, usage.requests, usage.retries, usage.cached, usage.prompt_tokens,
                              usage.completion_tokens, json.dumps(sorted(usage.models)),
                              json.dumps(sorted(usage.fingerprints))))

    def served_as(self) -> tuple[list[str], list[str]]:
        """The model ids and system fingerprints the server reported over all stored answers."""
        with self._lock:
            models = [m for (m,) in self._db.execute("SELECT DISTINCT model FROM answers WHERE model IS NOT NULL")]
            fps = [f for (f,) in self._db.execute(
                "SELECT DISTINCT system_fingerprint FROM answers WHERE system_fingerprint IS NOT NULL")]
        return sorted(models), sorted(fps)
