"""Which build runs: ``kubeloop --version`` names it, from the extension files found on disk; and what the
in-tree build backend asks for, per build."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kubeloop import __version__, _build


def _package_with(tmp_path: Path, *modules: str) -> Path:
    """A package folder holding an (empty) extension file for each of ``modules``."""
    root = tmp_path / "kubeloop"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for name in modules:
        *parents, leaf = name.split(".")[1:]
        folder = root.joinpath(*parents)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{leaf}.py").write_text("")
        (folder / f"{leaf}{suffix}").write_bytes(b"")
    return root


def test_a_package_without_extensions_is_pure_python(tmp_path: Path) -> None:
    root = _package_with(tmp_path)
    assert _build.compiled_modules(root) == ()
    assert _build.describe(root) == "pure Python"


def test_the_compiled_modules_are_those_with_an_extension_file(tmp_path: Path) -> None:
    some = ("kubeloop.server._rest", "kubeloop.store._sqlite")
    root = _package_with(tmp_path, *some)
    (root / "server" / "_handlers.py").write_text("")  # a source file alone is not compiled
    assert _build.compiled_modules(root) == some
    assert _build.describe(root) == f"compiled with mypyc: 2 of {len(_build.COMPILED_MODULES)} request-path modules"


def test_every_compiled_module_exists_as_source() -> None:
    """setup.py compiles these paths: a renamed module must be renamed here too."""
    src = Path(_build.__file__).parent
    for name in _build.COMPILED_MODULES:
        assert src.joinpath(*name.split(".")[1:]).with_suffix(".py").is_file(), name


def test_version_names_the_build() -> None:
    result = subprocess.run([sys.executable, "-m", "kubeloop.cli", "--version"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"kubeloop, version {__version__} ({_build.describe()})"


def _backend() -> Any:
    """The in-tree build backend (build_backend/kubeloop_build.py), loaded from the checkout."""
    path = Path(__file__).resolve().parents[2] / "build_backend" / "kubeloop_build.py"
    spec = importlib.util.spec_from_file_location("kubeloop_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_default_build_needs_nothing_but_setuptools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBELOOP_COMPILE", raising=False)
    backend = _backend()
    assert backend.get_requires_for_build_wheel() == []
    assert backend.get_requires_for_build_editable() == []
    assert backend.get_requires_for_build_sdist() == []


def test_the_compiled_build_asks_for_the_compiler_and_what_it_type_checks_against(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An isolated build environment has only what these hooks name: without the package's own
    dependencies mypyc's type check fails on every ``import orjson`` (found installing in a fresh venv)."""
    monkeypatch.setenv("KUBELOOP_COMPILE", "1")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    backend = _backend()
    with open("pyproject.toml", "rb") as f:
        dependencies = tomllib.load(f)["project"]["dependencies"]
    hooks = (backend.get_requires_for_build_wheel, backend.get_requires_for_build_editable,
             backend.get_requires_for_build_sdist)
    for hook in hooks:
        wanted = hook()
        assert "mypy>=1.11" in wanted and "types-PyYAML" in wanted
        assert set(dependencies) <= set(wanted)
