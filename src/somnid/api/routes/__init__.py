"""Thin route modules: parse, call one service, shape the answer."""
