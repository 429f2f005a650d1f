"""somnid benchmarks. Run each from the repo root: ``.venv/bin/python bench/<name>.py``."""
