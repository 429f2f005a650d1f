"""The memory domain: entries, kinds, names, time, reinforcement and decay. Pure logic, no I/O."""
