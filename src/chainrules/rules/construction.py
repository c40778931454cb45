"""Construction rules (being written)."""
