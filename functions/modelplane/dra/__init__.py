"""``python -m modelplane.dra``: run DRA selector, quantity and version checks from JSON lines."""
