"""What the functions are deployed from: the handler package and the shared layer zip.

The handlers (``functions/``) go in a small code asset of their own so that changing one
does not rebuild the layer; the library and its dependencies are the layer, built without
Docker by ``layers/build_layer.py``.
"""

from __future__ import annotations

import importlib.util
import shutil
from functools import lru_cache
from pathlib import Path
from types import ModuleType

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


@lru_cache(maxsize=1)
def build_layer_script() -> ModuleType:
    """layers/build_layer.py, which says what a layer zip holds (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("build_layer", REPO / "layers" / "build_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_layer_runs(zip_path: Path, embedder: str) -> None:
    """Refuse a layer that cannot run ``embedder`` (its extra is not in it): a synth error now,
    instead of a failure on the first request after the deploy."""
    script = build_layer_script()
    manifest = script.read_manifest(zip_path)
    if manifest is None:
        raise SystemExit(
            f"the Lambda layer {zip_path} has no {script.MANIFEST}: it was built by an older "
            "layers/build_layer.py; build it again"
        )
    if embedder not in manifest.get("embedders", []):
        raise SystemExit(
            f"the Lambda layer {zip_path} was built for {', '.join(manifest.get('embedders', []))}, "
            f"not -c embedder={embedder}: run python layers/build_layer.py --embedder {embedder}"
        )
