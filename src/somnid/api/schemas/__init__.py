"""The HTTP API's request and answer bodies, one module a resource (``common`` holds the
memory entries' shapes and what several resources share)."""
