"""Generating inputs from schemas: valid instances (strategies.py, compiler.py) and
instances that break exactly one keyword (invalid.py)."""
