"""The names of the retention classes and the visibilities, and nothing else.

:mod:`.retention` and :mod:`.visibility` hold the rules and re-export these. A command line
offers the names as choices, and ``capsule store`` (which a running ``capsule serve`` answers)
starts without what those rules import (:mod:`dataclasses`, :mod:`typing`, :mod:`datetime`).
"""

CLASSES: tuple[str, ...] = ("irreplaceable", "permanent", "replaceable", "ephemeral", "auto")
EFFECTIVE: tuple[str, ...] = CLASSES[:-1]
VISIBILITIES: tuple[str, ...] = ("private", "shared", "public")
