"""What a step payload must hold where the contract is ours (create, update), and its schema.

A payload is stored as it was sent (:mod:`.fixpack_format` reads it); creating or updating a
solution through our own API also checks it: every key is a spelling of its kind, no field is
given twice, and the fields' types and shapes are those of the kind's view model below. An import
(the Vector Bridge's files and database, ``solution_upsert``) keeps any payload instead, as the
original did. Errors name the key the caller used (``payload.run``, ``payload.vars.PORT``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..core import limits
from ..core.models import NO_CONTROL, NO_NUL
from . import fixpack_format

MAX_TEXT_CHARS = 8192
MAX_PAYLOAD_CHARS = 64 * 1024

FilePath = Annotated[str, Field(min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=NO_NUL)]
Command = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
Source = Annotated[str, Field(min_length=1, max_length=MAX_PAYLOAD_CHARS, pattern=NO_NUL)]
LongText = Annotated[str, Field(max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
EnvName = Annotated[str, Field(min_length=1, max_length=256, pattern=ENV_NAME)]
EnvValue = Annotated[str, Field(max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
# Every key a name (pydantic states the key rule as patternProperties only, which lets other keys by).
EnvVars = Annotated[
    dict[EnvName, EnvValue],
    Field(
        min_length=1,
        max_length=100,
        json_schema_extra={
            "additionalProperties": False,
            "propertyNames": {"minLength": 1, "maxLength": 256, "pattern": ENV_NAME},
        },
    ),
]
Globs = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=NO_NUL)]], Field(max_length=100)
]
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_CONTROL)]


class _View(BaseModel):
    # strict: JSON types as the schema says; a view holds only the fields its kind reads.
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    description: LongText | None = Field(None, description="What the step does (a payload may carry its own).")


class CmdView(_View):
    """Run a shell command: ``command`` (or ``run``), in ``cwd``, with ``env``."""

    command: Command
    cwd: FilePath | None = Field(None, description="Folder to run it in; may hold {project_root}.")
    env: EnvVars | None = Field(None, description="Variables set for the command.")


class PatchView(_View):
    """Change a file: replace ``search`` by ``replace`` in ``file``, or apply a unified ``diff``
    (``file`` optional then: the diff names its files)."""

    file: FilePath | None = None
    search: Annotated[str, Field(min_length=1, max_length=MAX_PAYLOAD_CHARS)] | None = None
    replace: Annotated[str, Field(max_length=MAX_PAYLOAD_CHARS)] | None = None
    diff: Source | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> PatchView:
        if self.diff is not None:
            if self.search is not None or self.replace is not None:
                raise ValueError("give a diff, or search and replace, not both")
        elif self.file is None or self.search is None or self.replace is None:
            missing = [n for n in ("file", "search", "replace") if getattr(self, n) is None]
            raise ValueError(f"needs diff, or file, search and replace (missing {', '.join(missing)})")
        return self


class CopyView(_View):
    """Copy a file or folder ``from`` (or ``src``) ``to`` (or ``dst``), as rsync would with ``flags``."""

    from_: FilePath = Field(alias="from")
    to: FilePath
    flags: Annotated[str, Field(max_length=256, pattern=NO_NUL)] | None = None
    include: Globs | None = None
    exclude: Globs | None = None


class ScriptView(_View):
    """Run a script: its text (``script``, or ``run``/``code``) or a ``file`` of the project."""

    script: Source | None = None
    file: FilePath | None = None
    interpreter: Name | None = Field(None, description="What runs it (bash, node, python, ...); absent: sh.")
    cwd: FilePath | None = None

    @model_validator(mode="after")
    def _script_or_file(self) -> ScriptView:
        if (self.script is None) == (self.file is None):
            raise ValueError("give the script's text (script or run) or a file, one of them")
        return self


class EnvView(_View):
    """Set environment variables: one ``key`` (or ``variable``, ``name``) and its ``value``, or
    ``set`` (or ``vars``) {NAME: value}; in ``file`` (a dotenv file) when given."""

    key: EnvName | None = None
    value: EnvValue | None = None
    set: EnvVars | None = None
    file: FilePath | None = Field(None, description="A dotenv file to write them to.")


VIEWS: Mapping[str, type[_View]] = {
    "cmd": CmdView,
    "patch": PatchView,
    "copy": CopyView,
    "script": ScriptView,
    "env": EnvView,
}
SHAPES = {
    "cmd": "{command (or run), cwd?, env?}",
    "patch": "{file, search, replace} or {diff, file?}",
    "copy": "{from (or src), to (or dst), flags?, include?, exclude?}",
    "script": "{script (or run) or file, interpreter?, cwd?}",
    "env": "{key (or variable) and value} or {set: {NAME: value}}, file?",
}
assert tuple(VIEWS) == fixpack_format.STEP_KINDS


def _env_shape(used: Mapping[str, str], given: Mapping[str, Any]) -> None:
    key, value = "key" in given, "value" in given
    if "set" in given and (key or value):
        raise ValueError(f"give {used['set']}, or {used.get('key', 'key')} and value, not both")
    if key != value:
        raise ValueError(f"{used.get('key', 'key')} and value go together")
    if not key and "set" not in given:
        raise ValueError("needs key and value, or set")


def check_payload(kind: str, payload: Mapping[str, Any]) -> None:
    """Refuse (ValueError naming the key as sent) a payload our own API does not take for ``kind``."""
    reading = fixpack_format.interpret(kind, payload)
    if reading.unknown:
        raise ValueError(f"payload.{reading.unknown[0]}: not a key of {kind} payloads")
    for names in reading.doubled.values():
        raise ValueError(f"'{names[0]}' and '{names[1]}' name the same field: give one of them")
    given = {name: payload[spelling] for name, spelling in reading.used.items()}
    if kind == "env":
        _env_shape(reading.used, given)
    try:
        VIEWS[kind].model_validate(given)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = [str(p) for p in first["loc"]]
        if loc:  # the caller's spelling of the field (the preferred one when it gave none)
            loc[0] = reading.used.get(loc[0]) or fixpack_format.SPELLINGS[kind].get(loc[0], (loc[0],))[0]
        message = first["msg"].removeprefix("Value error, ")
        raise ValueError(f"payload{'.' + '.'.join(loc) if loc else ''}: {message}") from None


def _given(spelling: str) -> dict[str, Any]:
    return {"required": [spelling], "properties": {spelling: {"not": {"type": "null"}}}}  # null is no value


def _one(name: str, kind: str) -> dict[str, Any]:
    """Exactly one spelling of the field given."""
    return {"oneOf": [_given(s) for s in fixpack_format.SPELLINGS[kind][name]]}


def _none(name: str, kind: str) -> dict[str, Any]:
    return {"not": {"anyOf": [_given(s) for s in fixpack_format.SPELLINGS[kind][name]]}}


def _shape(kind: str) -> dict[str, Any]:
    """The fields a payload of ``kind`` needs, as the validators above check them."""
    one, none = (lambda name: _one(name, kind)), (lambda name: _none(name, kind))
    if kind == "cmd":
        return one("command")
    if kind == "patch":
        return {
            "anyOf": [
                {"allOf": [one("diff"), none("search"), none("replace")]},
                {"allOf": [one("file"), one("search"), one("replace"), none("diff")]},
            ]
        }
    if kind == "copy":
        return {"allOf": [one("from"), one("to")]}
    if kind == "script":
        return {"anyOf": [{"allOf": [one("script"), none("file")]}, {"allOf": [one("file"), none("script")]}]}
    return {
        "anyOf": [
            {"allOf": [one("key"), one("value"), none("set")]},  # env
            {"allOf": [one("set"), none("key"), none("value")]},
        ]
    }


def payload_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a ``kind`` payload as our API takes it: every spelling of each field
    with the field's type (or null, which is no value), the fields the kind needs (one spelling
    each), and nothing else. That an optional field is given in at most one spelling is left to
    :func:`check_payload`: stated as ``not`` over pairs of spellings, schemathesis could generate
    no fixpack body at all (tests/serve/test_fuzz.py sets the refusals aside)."""
    view = VIEWS[kind].model_json_schema(by_alias=True)
    fields = view["properties"]
    properties = {
        spelling: {"anyOf": [fields[name], {"type": "null"}]}
        for name, spellings in fixpack_format.SPELLINGS[kind].items()
        for spelling in spellings
    }
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "allOf": [_shape(kind)],
        "description": f"{kind} payloads are {SHAPES[kind]}; at most one spelling of each field",
    }
