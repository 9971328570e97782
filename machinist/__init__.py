"""The machinist: the built-in machine that makes and improves machines."""
