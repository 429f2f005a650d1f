"""The HTTP edge: the only package that knows FastAPI."""
