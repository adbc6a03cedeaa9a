"""Signed agent cards: part 2."""
