"""kubeloop's build backend: setuptools', plus mypy when the compiled build is asked for.

``KUBELOOP_COMPILE=1 pip install .`` builds the hot modules of the request path with mypyc (see
``setup.py``); the compiler, and what it type-checks against, then have to be in the isolated build
environment, and only then: the default pure-Python build needs nothing but setuptools.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

from setuptools.build_meta import *  # noqa: F403  (the rest of the PEP 517/660 hooks, unchanged)

# What the compiled build needs besides setuptools: the compiler (the same bound as the type checker in
# the test extra, since mypyc compiles what mypy --strict accepts), and the package's own dependencies
# with the one stub package its types use, because mypyc type-checks the package against them exactly as
# ``mypy`` does in CI (without them every ``import orjson`` is an error and the build stops).
_COMPILER = ["mypy>=1.11", "types-PyYAML"]


def _compiled() -> bool:
    return os.environ.get("KUBELOOP_COMPILE", "") == "1"


def _compiled_requires() -> list[str]:
    with open("pyproject.toml", "rb") as f:
        dependencies: list[str] = tomllib.load(f)["project"]["dependencies"]
    return [*_COMPILER, *dependencies]


# setuptools' own hooks would run setup.py to find its setup_requires (there are none), and setup.py
# needs the compiler first: so these answer without it. setuptools >= 70.1 (pyproject.toml) builds
# wheels by itself, without the ``wheel`` package older versions asked for here.
def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _compiled_requires() if _compiled() else []


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _compiled_requires() if _compiled() else []


# An sdist compiles nothing, but setup.py still runs (and, asked for the compiled build, imports mypyc).
def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _compiled_requires() if _compiled() else []
