"""Build the shared Lambda layer zip without Docker.

    python layers/build_layer.py [--out build/layer.zip] [--embedder voyage] [--extra NAME,...]

``pip install --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64
--only-binary=:all: --python-version 3.12`` fetches the arm64 wheels of the runtime
dependencies (the project's own, the ``mongo`` extra and the embedder's extra), the library
(``layers/capsule``) is copied beside them under ``python/``, and the zip is written with a
manifest (``python/capsule_layer.json``: what it holds and which embedders it can run; the
CDK app refuses a ``-c embedder=`` the layer cannot run). It prints the unzipped size and
fails above Lambda's 250 MB limit (layers and function code together).

Both platform tags matter: Lambda's Python 3.12 runs on Amazon Linux 2023 (glibc 2.34), and
projects such as numpy publish only ``manylinux_2_28`` wheels for their newer releases, so
with ``manylinux2014`` alone pip silently falls back to an old release. Every package is
pinned to the version installed where the build runs (the tests' environment), so the layer
runs what the tests ran; the build fails if pip cannot honour that.

Only what the Lambda runtime documents it ships (the AWS SDK: boto3, botocore, s3transfer)
is left out. Everything else a handler imports is in the layer, jmespath (Powertools) too.

The layer ships its bytecode, compiled by a Python 3.12 (``--python``; by default the Python
running the build when it is 3.12, else ``python3.12`` on PATH) with ``--invalidation-mode unchecked-hash``: Lambda's /opt is read-only, so without
it every cold start compiles the sources it imports again (a handler's import took 1.1 s of
CPU that way against 0.4 s with the bytecode, ``scripts/bench_cold_import.py``), and the
source timestamps a zip restores would invalidate timestamp-checked bytecode anyway.

``--platform host`` builds for this machine's interpreter instead (tests import from it).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT_BYTES = 250 * 1024 * 1024
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
PYTHON_VERSION = "3.12"
BASE_EXTRAS = ("mongo",)
# The extras each embedder needs in the layer (the remote ones call their APIs over HTTP).
EMBEDDER_EXTRAS: dict[str, tuple[str, ...]] = {
    "voyage": ("voyage",),
    "openai": ("openai",),
    "hashing": (),
    "minilm": ("minilm",),  # not "local": no MCP server
}
DEFAULT_EMBEDDER = "voyage"
# The AWS SDK is in the Lambda runtime; pip, setuptools and wheel are only for building.
PROVIDED = ("boto3", "botocore", "s3transfer", "pip", "setuptools", "wheel")
# What the Lambda Python runtime has on its path besides the layer: the SDK and what it needs
# (import names), for tests that run handlers as Lambda would (link_runtime_sdk).
RUNTIME_MODULES = ("boto3", "botocore", "s3transfer", "dateutil", "urllib3", "six")
MANIFEST = "python/capsule_layer.json"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return canonical(re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0])


def requirements(extras: tuple[str, ...]) -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    return [r for r in wanted if not r.startswith("capsule-memory")]


def extras_for(embedder: str, more: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*BASE_EXTRAS, *EMBEDDER_EXTRAS[embedder], *more)))


def runnable_embedders(extras: tuple[str, ...]) -> list[str]:
    return sorted(name for name, needs in EMBEDDER_EXTRAS.items() if set(needs) <= set(extras))


def pins(environment: dict[str, str] | None = None) -> dict[str, str]:
    """``name -> version`` of every distribution installed where the build runs."""
    if environment is not None:
        return dict(environment)
    return {canonical(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}


def constraints(pinned: dict[str, str]) -> str:
    return "".join(
        f"{name}=={version}\n"
        for name, version in sorted(pinned.items())
        if name not in PROVIDED and name != "capsule-memory"
    )


def pip_command(target: Path, reqs: list[str], constraints_file: Path, platform: str) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-compile",
        "--target",
        str(target),
        "--only-binary=:all:",
        "--upgrade",
        "--constraint",
        str(constraints_file),
    ]
    if platform != "host":
        for tag in PLATFORMS:
            command += ["--platform", tag]
        command += ["--implementation", "cp", "--python-version", PYTHON_VERSION]
    return [*command, *reqs]


def install(target: Path, reqs: list[str], platform: str, pinned: dict[str, str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    constraints_file = target.parent / "constraints.txt"
    constraints_file.write_text(constraints(pinned))
    subprocess.run(pip_command(target, reqs, constraints_file, platform), check=True)
    constraints_file.unlink()


def installed(site: Path) -> dict[str, str]:
    """``name -> version`` of the distributions pip put in ``site``."""
    found = {}
    for info in site.glob("*.dist-info"):
        meta = (info / "METADATA").read_text("utf-8", "replace")
        name = re.search(r"^Name: (.+)$", meta, re.M)
        version = re.search(r"^Version: (.+)$", meta, re.M)
        if name and version:
            found[canonical(name.group(1).strip())] = version.group(1).strip()
    return found


def version_problems(site: Path, pinned: dict[str, str], names: tuple[str, ...] = ("numpy",)) -> list[str]:
    """Where the layer's version of ``names`` differs from the build environment's."""
    have = installed(site)
    return [
        f"{name} {have.get(name)} in the layer, {pinned[name]} in the tests' environment"
        for name in names
        if name in pinned and have.get(name) != pinned[name]
    ]


def prune(site: Path) -> None:
    for info in list(site.glob("*.dist-info")):
        name = canonical(info.name.split("-")[0])
        if name in PROVIDED:
            for line in (info / "RECORD").read_text().splitlines():
                path = site / line.split(",")[0]
                if path.is_file() and site in path.resolve().parents:
                    path.unlink()
            shutil.rmtree(info, ignore_errors=True)
    for folder in sorted((p for p in site.iterdir() if p.is_dir()), reverse=True):
        if folder.name in PROVIDED or (not any(folder.rglob("*")) and folder.name != "capsule"):
            shutil.rmtree(folder, ignore_errors=True)
    for cache in site.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: nothing runs them in Lambda


def python_for(platform: str, python: str | None) -> str | None:
    """The interpreter that compiles the layer's bytecode: it must be the runtime's version.

    One given with --python must be that version. Without it, ``python3.12`` on PATH is used when
    it works; when none does (a machine with another Python, a pyenv shim of a version not
    selected), the layer is built without bytecode and says so: the deploy walk-through works as
    printed, and each cold start compiles what it imports (--python PATH gives it back)."""
    if platform == "host" or (python is None and _version_of(sys.executable) == PYTHON_VERSION):
        return python or sys.executable
    if python is None:
        found = shutil.which(f"python{PYTHON_VERSION}")
        if found is None or _version_of(found) != PYTHON_VERSION:
            print(
                f"warning: no working python{PYTHON_VERSION} on PATH: the layer ships without bytecode, so each "
                f"cold start compiles its imports; pass --python PATH to a Python {PYTHON_VERSION} to include it",
                file=sys.stderr,
            )
            return None
        return found
    found = _version_of(python)
    if found != PYTHON_VERSION:
        raise SystemExit(
            f"{python} is not a working Python {PYTHON_VERSION} (it says {found or 'nothing'}): "
            f"pass --python PATH to the Python {PYTHON_VERSION} Lambda runs"
        )
    return python


def _version_of(python: str) -> str:
    """'3.12' for a working Python 3.12; '' when it does not run (a pyenv shim of no version)."""
    if python == sys.executable:
        return "{}.{}".format(*sys.version_info[:2])
    try:
        return subprocess.run(
            [python, "-c", "import sys; print('{}.{}'.format(*sys.version_info[:2]))"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def compile_tree(site: Path, python: str) -> None:
    """Bytecode beside every source, used without checking the source (Lambda's /opt is read-only)."""
    subprocess.run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
            "-s",
            str(site),
            "-p",
            "/opt/python",
            str(site),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def link_runtime_sdk(dest: Path) -> Path:
    """``dest`` holding links to this environment's copies of :data:`RUNTIME_MODULES`."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in RUNTIME_MODULES:
        source = Path(__import__(name).__file__)
        source = source.parent if source.name == "__init__.py" else source
        if not (dest / source.name).exists():
            (dest / source.name).symlink_to(source)
    return dest


def tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def write_manifest(site: Path, extras: tuple[str, ...], platform: str) -> dict[str, object]:
    manifest = {
        "extras": list(extras),
        "embedders": runnable_embedders(extras),
        "bytecode": any(site.rglob("*.pyc")),
        "platforms": list(PLATFORMS) if platform != "host" else ["host"],
        "python": PYTHON_VERSION if platform != "host" else "{}.{}".format(*sys.version_info[:2]),
        "versions": installed(site),
    }
    (site.parent / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def read_manifest(zip_path: Path) -> dict | None:
    with zipfile.ZipFile(zip_path) as archive:
        if MANIFEST not in archive.namelist():
            return None
        return json.loads(archive.read(MANIFEST))


def write_zip(root: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root))


def build_tree(
    root: Path,
    extras: tuple[str, ...],
    *,
    platform: str = "aarch64",
    pinned: dict[str, str] | None = None,
    compile_with: str | None = None,
) -> Path:
    """The layer's tree under ``root`` (``root/python`` is what Lambda puts on sys.path);
    ``compile_with``: the interpreter that compiles its bytecode (None: none is shipped)."""
    pinned = pins(pinned)
    site = root / "python"
    install(site, requirements(extras), platform, pinned)
    problems = version_problems(site, pinned)
    if problems:
        raise SystemExit("the layer would not run what the tests ran: " + "; ".join(problems))
    prune(site)
    shutil.copytree(REPO / "layers" / "capsule", site / "capsule", ignore=_SKIP)
    if compile_with:
        compile_tree(site, compile_with)
    write_manifest(site, extras, platform)
    return site


def build(out: Path, extras: tuple[str, ...], *, platform: str = "aarch64", compile_with: str | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="capsule-layer-") as tmp:
        root = Path(tmp)
        build_tree(root, extras, platform=platform, compile_with=compile_with)
        size = tree_size(root)
        write_zip(root, out)
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "layer.zip")
    parser.add_argument(
        "--embedder",
        choices=sorted(EMBEDDER_EXTRAS),
        default=DEFAULT_EMBEDDER,
        help="the embedder the deployment uses (-c embedder=): its extra goes in the layer",
    )
    parser.add_argument("--extra", default="", help="more extras of pyproject.toml to include (comma-separated)")
    parser.add_argument(
        "--platform",
        choices=["aarch64", "host"],
        default="aarch64",
        help="aarch64: Lambda's arm64 (the default); host: this machine, for tests",
    )
    parser.add_argument(
        "--python",
        help=f"the Python {PYTHON_VERSION} that compiles the bytecode (default python{PYTHON_VERSION} on PATH)",
    )
    parser.add_argument("--no-compile", action="store_true", help="ship no bytecode (slower cold starts)")
    args = parser.parse_args(argv)
    extras = extras_for(args.embedder, tuple(e for e in args.extra.split(",") if e))
    python = None if args.no_compile else python_for(args.platform, args.python)
    size = build(args.out, extras, platform=args.platform, compile_with=python)
    print(
        f"{args.out}: {size / 2**20:.1f} MB unzipped, {args.out.stat().st_size / 2**20:.1f} MB zipped "
        f"(extras: {', '.join(extras)})"
    )
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
