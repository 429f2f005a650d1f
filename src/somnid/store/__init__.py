"""The data directory: layout, locking, atomic writes and round-trip front-matter.

This package is the only code that touches memory files.
"""
