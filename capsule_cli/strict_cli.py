"""The ``capsule`` command's parser: an unknown option is refused naming the nearest known one.

argparse already refuses unknown options, but from the top-level parser, which does not know
the subcommand's options to suggest from, and it silently expands abbreviations (``--proj``
would be ``--project`` today and an error once a ``--proj-dir`` exists). :class:`StrictParser`
remembers which (sub)parser parsed last, refuses leftovers with that parser's usage and the
nearest of its options, and takes every option by its full name. Exit status 2, before any
command runs, so a refused command changes nothing. Every refusal is one line, and a second
that says where the usage is (:data:`HINT`), not argparse's usage block.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost a command does not otherwise pay
    from collections.abc import Sequence
    from typing import Any, NoReturn

HINT = "hint: '{command} --help' shows the usage"
OWNER = "_capsule_parser"  # the deepest parser of a command line, kept on the namespace while parsing


class StrictParser(argparse.ArgumentParser):
    """An ArgumentParser (subcommand parsers made by it are StrictParsers too) with nearest-name errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every add_argument, and a formatter without a width
        # imports shutil (and its compression modules) for the terminal's: the same width here.
        from .render import terminal_columns

        return self.formatter_class(prog=self.prog, width=terminal_columns(80) - 2)

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        """One line saying what is wrong, and where the usage is; exit status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n{HINT.format(command=self.prog)}\n")

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        namespace, extras = super().parse_known_args(args, namespace)
        if not hasattr(namespace, OWNER):  # a subcommand's parser finished first and set itself
            setattr(namespace, OWNER, self)
        return namespace, extras

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        words = list(sys.argv[1:] if args is None else args)
        # An unknown option before the command is named, not reported as a missing COMMAND.
        for word in words:
            if not word.startswith("-") or word == "-":
                break
            if word.split("=", 1)[0] not in option_names(self):
                self.error(refusal(self, word))
        namespace, extras = self.parse_known_args(words, namespace)
        owner = vars(namespace).pop(OWNER, self)
        if extras:
            # Leftover words after an unknown option are most likely its value: name the option only.
            options = [extra for extra in extras if extra.startswith("-") and extra != "-"]
            owner.error("; ".join(refusal(owner, extra) for extra in options or extras))
        return namespace


def option_names(parser: argparse.ArgumentParser) -> list[str]:
    return sorted({name for action in parser._actions for name in action.option_strings})


def refusal(parser: argparse.ArgumentParser, extra: str) -> str:
    if not extra.startswith("-") or extra == "-":
        return f"unexpected argument {extra!r}"
    name = extra.split("=", 1)[0]
    known = option_names(parser)
    return f"unknown option '{name}' (did you mean '{nearest(name, known)}'?)"


def nearest(name: str, known: list[str]) -> str:
    import difflib  # only for a refused option

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    if close:
        return close[0]
    return max(known, key=lambda k: difflib.SequenceMatcher(None, name, k).ratio())


__all__ = ["StrictParser", "refusal", "nearest"]
