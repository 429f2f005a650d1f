"""somnid: a local memory daemon for LLM agents."""

__version__ = "0.1.0"
