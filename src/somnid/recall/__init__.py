"""Recall: the derived index (keywords + vectors), hybrid scoring and associative hints.

The only code that touches the index.
"""
