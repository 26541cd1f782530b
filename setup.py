"""Build script: the pure-Python package by default; ``KUBELOOP_COMPILE=1`` compiles the request path.

Everything else about the package is declared in ``pyproject.toml``. The compiled build turns the
modules every API request runs through (``COMPILED_MODULES`` in ``src/kubeloop/_build.py``: routing,
handlers, validation, the store, the HTTP request cycle) into C extensions with mypyc, which compiles
the code exactly as ``mypy --strict`` types it; ``docs/performance.md`` ("Compiled build") has what it
buys. The sources are the same for both builds: ``scripts/check`` runs the whole suite on the pure build
and the request path's tests on the compiled one (``scripts/compiled-check``).
"""

from __future__ import annotations

import os
import runpy

from setuptools import setup


def _ext_modules() -> list[object]:
    if os.environ.get("KUBELOOP_COMPILE", "") != "1":
        return []
    from mypyc.build import mypycify

    # Read without importing the package (its dependencies need not be installed to build it).
    names = runpy.run_path(os.path.join("src", "kubeloop", "_build.py"))["COMPILED_MODULES"]
    paths = [os.path.join("src", *name.split(".")) + ".py" for name in names]
    return list(mypycify(paths, opt_level="3", multi_file=True))


# The C files mypyc writes (one per module) compile in parallel, one per core.
setup(ext_modules=_ext_modules(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
