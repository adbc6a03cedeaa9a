"""Hypothesis's example database and caches: where generated failures are kept so a
later run (or another machine) replays them."""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase

# A shared database keeps what a campaign found: hypothesis's Redis database lets keys
# expire after 8 days unread by default, which loses a long campaign's failures. Unless the
# config says how long (``examples.keep``), keys are kept this long (about ten years).
KEEP_FOREVER = timedelta(days=3650)


@dataclass(frozen=True)
class SharedExamples:
    """Where a shared example database lives (config ``examples``: a folder or a
    redis:// URL), how long unread examples are kept, and the namespace (profile and
    target) that keeps one campaign's examples from another's."""

    at: str
    keep: timedelta = KEEP_FOREVER
    namespace: str = ""

    @property
    def is_redis(self) -> bool:
        return self.at.startswith(("redis://", "rediss://", "unix://"))


class SharedDatabase(ExampleDatabase):
    """A shared example database that counts what this process replayed of what other
    processes stored (other workers, other shards, earlier campaigns): the evidence that
    sharing works, since a wrong address or prefix shares nothing and says nothing."""

    def __init__(self, inner: ExampleDatabase) -> None:
        super().__init__()
        self.inner = inner
        self._ours: set[tuple[bytes, bytes]] = set()  # (key, value) this process stored
        self._theirs: set[tuple[bytes, bytes]] = set()  # (key, value) read here, stored elsewhere

    @property
    def replayed(self) -> int:
        """Distinct examples this process read that another process stored."""
        return len(self._theirs)

    def save(self, key: bytes, value: bytes) -> None:
        self._ours.add((key, value))
        self.inner.save(key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        for value in self.inner.fetch(key):
            if (key, value) not in self._ours:
                self._theirs.add((key, value))
            yield value

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._ours.add((dest, value))
        self.inner.move(src, dest, value)


def namespace_of(profile: str, target: str) -> str:
    """A key prefix naming the profile and the target (scheme, credentials and path left
    out: two URLs of one server share it)."""
    where = re.sub(r"^[a-z]+://", "", target)
    where = where.split("@")[-1].split("/")[0] or target
    return re.sub(r"[^A-Za-z0-9._:-]+", "_", f"{profile}:{where}")


def example_database(directory: Path | None, shared: SharedExamples | str | None = None) -> ExampleDatabase:
    """Hypothesis's storage under ``directory`` (the example database in
    ``examples/``, its caches beside it), never in whatever folder the command
    runs in; in memory when ``directory`` is None (replays). ``shared`` (config
    ``examples``) puts the examples where other workers and machines find them: a
    folder, or a redis:// URL (hypothesis's Redis database), so a failure one finds
    is replayed by all (``SharedDatabase`` counts what came from elsewhere); each
    profile and target in its own namespace (a key prefix, or a sub-folder)."""
    from hypothesis.configuration import set_hypothesis_home_dir

    home = directory or Path(tempfile.gettempdir()) / "conformance-hypothesis"
    set_hypothesis_home_dir(home)
    seed_unicode_cache(home)
    if isinstance(shared, str):
        shared = SharedExamples(shared)
    if shared and shared.is_redis:
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as exc:
            raise ValueError(f"config examples: {shared.at.split('@')[-1]} needs the redis package "
                             "(pip install redis)") from exc
        prefix = f"conformance:{shared.namespace}:" if shared.namespace else "conformance:"
        return SharedDatabase(RedisExampleDatabase(redis.Redis.from_url(shared.at), expire_after=shared.keep,
                                                   key_prefix=prefix.encode()))
    if shared:
        folder = Path(shared.at).expanduser() / shared.namespace.replace(":", "_")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"config examples: folder {folder} cannot be created: {exc.strerror or exc}") from None
        return SharedDatabase(DirectoryBasedExampleDatabase(str(folder)))
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


