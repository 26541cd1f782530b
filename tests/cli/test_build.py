"""Which build runs: ``kubeloop --version`` names it, from the extension files found on disk."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
from pathlib import Path

from kubeloop import _build


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
    assert result.stdout.strip() == f"kubeloop, version 0.1.0 ({_build.describe()})"
