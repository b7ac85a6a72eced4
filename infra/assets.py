"""What the functions are deployed from: the handler package and the shared layer zip.

The handlers (``functions/``) go in a small code asset of their own so that changing one
does not rebuild the layer; the library and its dependencies are the layer, built without
Docker by ``layers/build_layer.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_LAYER_ZIP = REPO / "build" / "layer.zip"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "console")


def stage_functions(build_dir: Path) -> Path:
    """Copy the ``functions`` package into ``build_dir/functions-asset``; returns the asset root."""
    root = build_dir / "functions-asset"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(REPO / "functions", root / "functions", ignore=_SKIP)
    return root


def layer_zip(path: str | None) -> Path:
    zip_path = Path(path) if path else DEFAULT_LAYER_ZIP
    if not zip_path.is_file():
        raise SystemExit(
            f"the Lambda layer {zip_path} does not exist: run `python layers/build_layer.py` first "
            "(or pass -c layer_zip=PATH)"
        )
    return zip_path
