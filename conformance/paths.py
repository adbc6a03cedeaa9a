"""Where the kit's files are: a leaf module every layer may import (it imports nothing of
the kit), so that reading a spec never needs the module that loads profiles."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent  # the source checkout (when running from one)
# The folder holding profiles/ and specs/: the top of the source checkout (also for an
# editable install), or conformance/_data/ where a wheel puts them (see pyproject.toml).
_PACKAGED_DATA = PACKAGE_DIR / "_data"
DATA_ROOT = _PACKAGED_DATA if (_PACKAGED_DATA / "profiles").is_dir() else ROOT
PROFILES_DIR = DATA_ROOT / "profiles"
RUN_INI = PACKAGE_DIR / "run.ini"  # pytest settings of `conformance run`
