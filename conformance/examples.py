"""Hypothesis's example database and caches: where generated failures are kept so a
later run (or another machine) replays them."""

from __future__ import annotations

import gzip
import json
import tempfile
import unicodedata
from pathlib import Path

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase


def example_database(directory: Path | None, shared: str | None = None) -> ExampleDatabase:
    """Hypothesis's storage under ``directory`` (the example database in
    ``examples/``, its caches beside it), never in whatever folder the command
    runs in; in memory when ``directory`` is None (replays). ``shared`` (config
    ``examples``) puts the examples where other workers and machines find them: a
    folder, or a redis:// URL (hypothesis's Redis database), so a failure one finds
    is replayed by all."""
    from hypothesis.configuration import set_hypothesis_home_dir

    home = directory or Path(tempfile.gettempdir()) / "conformance-hypothesis"
    set_hypothesis_home_dir(home)
    seed_unicode_cache(home)
    if shared and shared.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as exc:
            raise ValueError(f"config examples: {shared.split('@')[-1]} needs the redis package "
                             "(pip install redis)") from exc
        return RedisExampleDatabase(redis.Redis.from_url(shared))
    if shared:
        folder = Path(shared).expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"config examples: folder {folder} cannot be created: {exc.strerror or exc}") from None
        return DirectoryBasedExampleDatabase(str(folder))
    if directory is None:
        return InMemoryExampleDatabase()
    (directory / "examples").mkdir(parents=True, exist_ok=True)
    return DirectoryBasedExampleDatabase(str(directory / "examples"))


# The characters that UTF-8 can encode: all but the surrogates. hypothesis-jsonschema
# asks hypothesis for text "encodable as utf-8"; on a cold cache hypothesis works
# that out by building a list of 1.1 million pairs (about 180 MB at peak).
UTF8_INTERVALS = [[[0, 0xD7FF], [0xE000, 0x10FFFF]], []]


def seed_unicode_cache(home: Path) -> None:
    """Write hypothesis's cache entry for the UTF-8 codec (a known answer; the
    project's tests compare it with what hypothesis computes)."""
    path = home / "unicode_data" / unicodedata.unidata_version / "codec-v2-utf-8.json.gz"
    if path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(path, "wb", mtime=1) as out:
            out.write(json.dumps(UTF8_INTERVALS).encode())
    except OSError:
        pass  # hypothesis computes it itself


