"""What starts a run: the pytest plugin (``plugin``), campaigns (``fuzz``) and a saved case
replayed (``replay``). The `conformance` command that calls them is conformance/cli.py (the
console script's module and ``python -m conformance.cli``)."""
