"""How a fixpack's step payloads are read: every spelling in use, and one view of them for our code.

The one place that knows the spellings. A step payload is stored as its file (or caller) wrote it
— a solution read back or exported still holds ``run``, ``src``, ``dst``, ``variable`` where the
file had them — and our code reads it through :func:`payload_view`, which gives each kind's
fields by one name whichever spelling was used. The Vector Bridge (the original multi-project
memory) wrote ``cmd`` payloads as ``{command}`` or ``{run, cwd}``, ``patch`` as ``{file, search,
replace}`` or ``{file, diff}``, ``copy`` as ``{src, dst, flags, include, exclude}`` while its
preview read ``{from, to}``, ``env`` as ``{variable, value}`` while its preview read ``{key,
value}`` and its docs showed ``{set: {NAME: value}}``; any payload may carry a ``description``
(COMPAT.md §1.17). Where a payload gives two spellings of one field, both are kept and the view
reads the first of the field's spellings below: the one the original's server read, where it
read one. Keys of a payload that no spelling names are kept in place and listed by
:func:`interpret`; a step of a kind outside :data:`STEP_KINDS` is kept as written (its payload
is all "other").

Keys a file carries at the other levels (the fixpack, a signature, step or check) that no
model knows are kept under ``extra`` by :func:`keep_unknown`, when the caller asks for it (an import).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

STEP_KINDS = ("cmd", "patch", "copy", "script", "env")

DESCRIPTION = ("description",)

# step kind -> field of the view -> the spellings that give it, the preferred first.
SPELLINGS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "cmd": {"command": ("command", "run"), "cwd": ("cwd",), "env": ("env",), "description": DESCRIPTION},
    "patch": {
        "file": ("file", "path"),
        "search": ("search",),
        "replace": ("replace",),
        "diff": ("diff", "patch"),
        "description": DESCRIPTION,
    },
    "copy": {
        "from": ("from", "src", "source"),
        "to": ("to", "dst", "dest", "destination", "target"),
        "flags": ("flags",),
        "include": ("include", "includes"),
        "exclude": ("exclude", "excludes"),
        "description": DESCRIPTION,
    },
    "script": {
        "script": ("script", "run", "code", "content"),
        "file": ("file", "path"),
        "interpreter": ("interpreter", "shell", "language", "lang"),
        "cwd": ("cwd",),
        "description": DESCRIPTION,
    },
    "env": {
        "key": ("key", "variable", "name"),
        "value": ("value",),
        "set": ("set", "vars", "variables"),
        "file": ("file",),
        "description": DESCRIPTION,
    },
}
assert tuple(SPELLINGS) == STEP_KINDS

# Every field a view has, whatever the kind (absent ones are None), so a renderer never misses a key.
VIEW_FIELDS: tuple[str, ...] = tuple(dict.fromkeys(f for fields in SPELLINGS.values() for f in fields))

EXTRA = "extra"  # where kept unknown keys live, at every level of a fixpack but a payload
KEEP_UNKNOWN = "keep_unknown"  # the validation-context flag an import sets


@dataclass
class Reading:
    """What :func:`interpret` made of one payload."""

    view: dict[str, Any]  # every VIEW_FIELDS key (None when absent) and "other"
    used: dict[str, str] = field(default_factory=dict)  # view field -> the spelling it was read from
    unknown: list[str] = field(default_factory=list)  # payload keys no spelling of this kind names
    doubled: dict[str, list[str]] = field(default_factory=dict)  # view field -> its spellings given, in file order

    @property
    def interpreted(self) -> list[str]:
        """``run as command``, ...: the spellings read as another field name (for an explanation)."""
        return [f"{spelling} as {name}" for name, spelling in self.used.items() if spelling != name]


def interpret(kind: str, payload: Mapping[str, Any]) -> Reading:
    """The view of ``payload`` for a step of ``kind``, and what was read from where."""
    fields = SPELLINGS.get(kind, {})
    known = {spelling: name for name, spellings in fields.items() for spelling in spellings}
    view: dict[str, Any] = dict.fromkeys(VIEW_FIELDS)
    reading = Reading(view=view)
    for name, spellings in fields.items():
        given = [s for s in spellings if payload.get(s) is not None]  # null is no value (as in the models)
        if given:
            view[name], reading.used[name] = payload[given[0]], given[0]
        if len(given) > 1:
            reading.doubled[name] = [k for k in payload if k in given]
    reading.unknown = [k for k in payload if k not in known]
    view["other"] = {k: payload[k] for k in reading.unknown}
    if kind == "env":
        _env(view)
    return reading


def _env(view: dict[str, Any]) -> None:
    # One variable may be given as key/value or inside 'set': the view has both forms, so a
    # renderer shows "Variable: KEY" for one variable and the whole set for several.
    given = view["set"] if isinstance(view["set"], Mapping) else {}
    if isinstance(view["key"], str):
        view["set"] = {**given, view["key"]: view["value"]}
    elif len(given) == 1:
        ((view["key"], view["value"]),) = given.items()


def payload_view(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The interpreted view of a step's payload, for rendering and for our code.

    Keys: ``command cwd env description`` (cmd), ``file search replace diff`` (patch), ``from to
    flags include exclude`` (copy), ``script file interpreter cwd`` (script), ``key value set
    file`` (env: ``set`` is every variable as {NAME: value}, ``key``/``value`` the one variable
    when there is one), each None when the payload does not give it, whatever the kind; and
    ``other``: the payload's keys that no spelling of its kind names, as written (all of them
    for a kind this format does not know). Values are as stored (not checked here: an imported
    payload keeps what its file had).
    """
    return interpret(kind, payload).view


def keeping(context: Any) -> bool:
    return isinstance(context, Mapping) and bool(context.get(KEEP_UNKNOWN))


def keep_unknown(data: dict[str, Any], known: frozenset[str] | set[str]) -> dict[str, Any]:
    """``data`` with every key outside ``known`` moved under ``extra`` (merged with an ``extra``
    the file already has; a key in both is refused rather than one of them dropped)."""
    unknown = [k for k in data if k not in known and k != EXTRA]
    if not unknown:
        return data
    kept = data.get(EXTRA, {})
    if not isinstance(kept, dict):
        return data  # validation names the wrong type of 'extra'
    clash = [k for k in unknown if k in kept]
    if clash:
        raise ValueError(f"'{clash[0]}' is given both as a key and inside '{EXTRA}'")
    out = {k: v for k, v in data.items() if k not in unknown}
    out[EXTRA] = {**kept, **{k: data[k] for k in unknown}}
    return out
