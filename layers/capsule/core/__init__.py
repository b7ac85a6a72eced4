"""The memory model and its vocabulary: models, records, errors, limits, clock, text, retention rules, cursors.
May import: the standard library and third-party packages only; every other package builds on it.
"""
