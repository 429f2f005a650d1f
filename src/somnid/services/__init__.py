"""Use-cases over the store (and later the index): what the API, CLI and dreams call."""
