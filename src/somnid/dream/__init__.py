"""Consolidation while asleep: the dream's ReAct loop, its tools, and the LLM backends it
talks to (``somnid.dream.llm``: websocket bridge to the host, HTTP callback, or an
OpenAI-compatible endpoint)."""
