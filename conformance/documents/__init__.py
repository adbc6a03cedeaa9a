"""Reading the protocol documents: loading and $ref inlining (schemas.py), operations and
error catalogues (openapi.py, verbs.py, readers.py) and the limits a profile names (limits.py)."""
