"""The project's own tests (a package, so that ``tests.conftest`` is the one conftest module)."""
