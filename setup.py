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
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext


def _ext_modules() -> list[object]:
    if os.environ.get("KUBELOOP_COMPILE", "") != "1":
        return []
    from mypyc.build import mypycify

    # Read without importing the package (its dependencies need not be installed to build it).
    names = runpy.run_path(os.path.join("src", "kubeloop", "_build.py"))["COMPILED_MODULES"]
    paths = [os.path.join("src", *name.split(".")) + ".py" for name in names]
    return list(mypycify(paths, opt_level="3", multi_file=True))


class _ParallelBuildExt(build_ext):
    """``build_ext`` that compiles the C files of each extension in parallel, one per core.

    setuptools' ``--parallel`` builds whole extensions side by side, but compiles the sources of one
    extension one after another, and mypyc's ``multi_file`` build puts almost all the C (one file per
    module, the largest over 1 MB) in a single shared-library extension: serially that was most of
    the compiled build's time. Here every C file of every extension goes to one pool of
    ``os.cpu_count()`` compilers, largest first (the longest job starts first), with the same command
    line distutils would have run, so the objects and the extension are the same; only the order of
    the compiler runs changes."""

    def build_extensions(self) -> None:
        compiler: Any = self.compiler
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:

            def compile_in_parallel(
                sources: list[str],
                output_dir: str | None = None,
                macros: Any = None,
                include_dirs: Any = None,
                debug: Any = 0,
                extra_preargs: Any = None,
                extra_postargs: Any = None,
                depends: Any = None,
            ) -> list[str]:
                # The body of distutils' CCompiler.compile, with its loop over the objects spread on the pool.
                macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                    output_dir, macros, include_dirs, sources, depends, extra_postargs
                )
                cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
                todo = sorted((obj for obj in objects if obj in build), key=lambda obj: -os.path.getsize(build[obj][0]))
                jobs = [
                    pool.submit(compiler._compile, obj, *build[obj], cc_args, extra_postargs, pp_opts) for obj in todo
                ]
                for job in jobs:
                    job.result()
                return list(objects)

            compiler.compile = compile_in_parallel
            super().build_extensions()


# Each extension's C files compile in parallel (``_ParallelBuildExt``), and the extensions side by side.
setup(
    ext_modules=_ext_modules(),
    cmdclass={"build_ext": _ParallelBuildExt},
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
)
