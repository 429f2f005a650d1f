"""One memory on several machines: the history repository synced through a git remote.

:mod:`~somnid.sync.service` runs the rounds (fetch, merge, push) and answers the status;
:mod:`~somnid.sync.merging` merges without git touching the work tree and puts the merged
files in place through the store; :mod:`~somnid.sync.merge` is the front-matter merge
driver git runs for entry files; :mod:`~somnid.sync.remote` talks to the remote.
"""
