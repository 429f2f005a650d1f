"""The server's edge: uvicorn with deadlines and a connection cap, the daemon's start and
stop, and ``daemon.json`` (where a running daemon listens)."""
