"""The run: from its options to verdicts. A profile loaded (``profiles``), the user's config
and options checked once (``config``, ``options``), the run's context opened against the
reference or a live URL (``launch``, ``targets``, ``examples``), the preflight, one
requirement run and judged (``runner``), workers (``parallel``). It imports the protocols
and everything below them, never the reports or the drivers."""
