"""The names a fixpack file may use for our fields: the Vector Bridge's, and the obvious aliases.

The one place that maps them. A file written for the Vector Bridge (the original multi-project
memory) has step kinds ``cmd``, ``patch``, ``copy``, ``script`` and ``env``; its cmd payload is
``{"run", "cwd"}`` and its patch payload may be a unified diff ``{"diff", "file"}``. Each name
on the left is read as ours on the right, per step kind; a payload giving both names of one
field is refused (which one was meant cannot be told). Keys a file carries that no model
knows are kept under ``extra`` by :func:`keep_unknown`, when the caller asks for it (an import).
"""

from __future__ import annotations

from typing import Any, Mapping

STEP_KINDS = ("cmd", "patch", "copy", "script", "env")

# step kind -> {name a file may use -> our field}
PAYLOAD_NAMES: Mapping[str, Mapping[str, str]] = {
    "cmd": {"run": "command"},
    "patch": {"patch": "diff", "path": "file"},
    "copy": {"from": "src", "source": "src", "to": "dest", "destination": "dest", "target": "dest"},
    "script": {"run": "script", "code": "script", "content": "script", "path": "file",
               "shell": "interpreter", "language": "interpreter", "lang": "interpreter"},
    "env": {"variables": "vars", "env": "vars", "key": "name"},
}

EXTRA = "extra"  # where kept unknown keys live, at every level of a fixpack
KEEP_UNKNOWN = "keep_unknown"  # the validation-context flag an import sets


def rename(data: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """``data`` with each alias renamed to our field; both given is a ValueError naming them."""
    out = dict(data)
    for alias, ours in names.items():
        if alias not in out:
            continue
        if ours in out:
            raise ValueError(f"'{alias}' and '{ours}' name the same field: give one of them")
        out[ours] = out.pop(alias)
    return out


def renamed(data: Any, names: Mapping[str, str]) -> list[str]:
    """What :func:`rename` reads as ours in ``data``: ``run as command``, ..."""
    if not isinstance(data, dict):
        return []
    return [f"{alias} as {ours}" for alias, ours in names.items() if alias in data]


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
