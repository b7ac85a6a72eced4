"""Where the data folder is, without loading the settings model (pydantic): the hooks and the
commands that a running ``capsule serve`` answers need only this much of the settings."""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost the warm route (capsule serve answering) does not pay
    from collections.abc import Mapping

DATA_DIR_VARIABLE = "CAPSULE_DATA_DIR"


def default_data_dir() -> Path:
    """The data folder when neither CAPSULE_DATA_DIR nor --data-dir names one."""
    return Path.home() / ".capsule"


def data_dir_from(environ: Mapping[str, str], given: str | Path | None = None) -> Path:
    """The folder :meth:`capsule.config.Settings.from_env` picks: ``given``, else the
    environment, else the default (an empty value counts as unset, as there)."""
    if given:
        return Path(given)
    return Path(environ[DATA_DIR_VARIABLE]) if environ.get(DATA_DIR_VARIABLE, "") != "" else default_data_dir()


__all__ = ["DATA_DIR_VARIABLE", "default_data_dir", "data_dir_from"]
