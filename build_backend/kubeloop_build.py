"""kubeloop's build backend: setuptools', plus mypy when the compiled build is asked for.

``KUBELOOP_COMPILE=1 pip install .`` builds the hot modules of the request path with mypyc (see
``setup.py``); the compiler then has to be in the isolated build environment, and only then: the
default pure-Python build needs nothing but setuptools.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools.build_meta import *  # noqa: F403  (the rest of the PEP 517/660 hooks, unchanged)

# The compiler the compiled build needs; the same bound as the type checker in the test extra,
# since mypyc compiles what mypy --strict accepts.
_COMPILER = ["mypy>=1.11"]


def _compiled() -> bool:
    return os.environ.get("KUBELOOP_COMPILE", "") == "1"


# setuptools' own hooks would run setup.py to find its setup_requires (there are none), and setup.py
# needs the compiler first: so these answer without it. setuptools >= 70.1 (pyproject.toml) builds
# wheels by itself, without the ``wheel`` package older versions asked for here.
def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return list(_COMPILER) if _compiled() else []


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return list(_COMPILER) if _compiled() else []
