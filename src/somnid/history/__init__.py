"""The git history of the memory part of the data dir: who changed what, and undo.

``memory/`` and ``skills/`` (not the derived index, the models, the token or the lock; not
the raw session logs either) form a git repository at ``<data>/.git``. A background
committer records every write through the services, every dream and every hand edit the
watcher sees; :mod:`somnid.history.service` lists, shows, reverts and purges.
"""
