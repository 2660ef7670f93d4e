"""The SQLite database and its WAL are private to the server's user (0600), whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from flowforge.server.stores.sqlite import SQLiteStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_the_database_and_its_wal_are_created_0600(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        store = SQLiteStore(tmp_path / "data" / "flowforge.db")
        await store.open()
        async with store.transaction() as tx:
            await tx.set_metadata_if_absent("mode-test", "x")
        files = [tmp_path / "data" / name for name in ("flowforge.db", "flowforge.db-wal", "flowforge.db-shm")]
        assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}
        assert _mode(tmp_path / "data") == 0o700
        await store.close()
    finally:
        os.umask(previous)


async def test_an_existing_readable_database_is_narrowed_to_0600(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    store = SQLiteStore(path)
    await store.open()
    try:
        assert _mode(path) == 0o600
    finally:
        await store.close()
