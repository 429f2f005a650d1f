"""The agent's memory tools: what a model calls, with JSON schemas made from Python."""
