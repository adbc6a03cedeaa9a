"""The gRPC binding's own rows: part 2."""
