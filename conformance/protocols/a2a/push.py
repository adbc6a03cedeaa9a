"""Push notifications: part 2."""
