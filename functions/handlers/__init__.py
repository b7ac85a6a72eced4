"""One Lambda handler per route of :mod:`functions.routes`; each module exposes ``handler``."""
