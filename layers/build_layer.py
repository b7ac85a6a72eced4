"""Build the shared Lambda layer zip without Docker.

    python layers/build_layer.py [--out build/layer.zip] [--extra mongo,voyage]

``pip install --platform manylinux2014_aarch64 --only-binary=:all: --python-version 3.12``
fetches the arm64 wheels of the runtime dependencies (the project's own plus the extras the
hosted mode needs), the library (``layers/capsule``) is copied beside them under
``python/``, and the zip is written. It prints the unzipped size and fails above Lambda's
250 MB limit (layers and function code together).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT_BYTES = 250 * 1024 * 1024
PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.12"
DEFAULT_EXTRAS = ("mongo", "voyage")
# Already in the Lambda runtime, or only for building: left out of the layer.
PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "pip", "setuptools", "wheel")
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def requirements(extras: tuple[str, ...]) -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    return [r for r in wanted if not r.startswith("capsule-memory")]


def install(target: Path, reqs: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(target),
               "--platform", PLATFORM, "--implementation", "cp", "--python-version", PYTHON_VERSION,
               "--only-binary=:all:", "--upgrade", *reqs]
    subprocess.run(command, check=True)


def prune(site: Path) -> None:
    for name in PROVIDED:
        for path in site.glob(f"{name}*"):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink()
    for cache in site.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def write_zip(root: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root))


def build(out: Path, extras: tuple[str, ...]) -> int:
    with tempfile.TemporaryDirectory(prefix="capsule-layer-") as tmp:
        root = Path(tmp)
        site = root / "python"  # Lambda puts /opt/python on sys.path
        install(site, requirements(extras))
        prune(site)
        shutil.copytree(REPO / "layers" / "capsule", site / "capsule", ignore=_SKIP)
        size = tree_size(root)
        write_zip(root, out)
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "layer.zip")
    parser.add_argument("--extra", default=",".join(DEFAULT_EXTRAS),
                        help="extras of pyproject.toml to include (comma-separated)")
    args = parser.parse_args(argv)
    extras = tuple(e for e in args.extra.split(",") if e)
    size = build(args.out, extras)
    print(f"{args.out}: {size / 2**20:.1f} MB unzipped, {args.out.stat().st_size / 2**20:.1f} MB zipped")
    problem = size_problem(size)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


def size_problem(unzipped_bytes: int) -> str | None:
    if unzipped_bytes > LIMIT_BYTES:
        return f"the layer is over Lambda's 250 MB unzipped limit ({unzipped_bytes / 2**20:.1f} MB)"
    return None


if __name__ == "__main__":
    sys.exit(main())
