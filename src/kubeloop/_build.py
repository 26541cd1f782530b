"""Which build is running: the pure-Python package, or the compiled one.

``KUBELOOP_COMPILE=1 pip install .`` compiles ``COMPILED_MODULES`` with mypyc (``setup.py`` reads the
list from this file); every other module, and every module of the default build, runs as Python.
:func:`compiled_modules` reports which of them this installation has as C extensions, found on disk
without importing them.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

# The request path: the modules that took a share of the server's CPU in a profile of durable creates.
# A module here must not be subclassed or monkeypatched from interpreted code (mypyc's native classes
# refuse both). So these stay interpreted: ``server/_admission.py`` (AdmissionChain subclasses ``list``,
# and interpreted plugins subclass its plugin bases), ``server/_strategy.py`` (subclasses override class
# attributes, which a compiled base would read from its own slots), ``cli/_serving.py`` (subclasses
# uvicorn's protocol) and ``api/_clock.py`` (``Clock`` is a runtime-checkable protocol, which a
# compiled class is not); ``api/_schemas.py`` stays out because mypyc 2.4 fails on it with an
# internal error.
COMPILED_MODULES = (
    "kubeloop.api._apply",
    "kubeloop.api._fieldpath",
    "kubeloop.api._kinds",
    "kubeloop.api._unknown_fields",
    "kubeloop.api._validation",
    "kubeloop.cli._serving_cycle",
    "kubeloop.server._app",
    "kubeloop.server._authz_chain",
    "kubeloop.server._authz_reviews",
    "kubeloop.server._defaults",
    "kubeloop.server._field_validation",
    "kubeloop.server._handlers",
    "kubeloop.server._http",
    "kubeloop.server._list",
    "kubeloop.server._managed",
    "kubeloop.server._options",
    "kubeloop.server._requestinfo",
    "kubeloop.server._rest",
    "kubeloop.server._state",
    "kubeloop.store._keys",
    "kubeloop.store._sqlite",
)


def compiled_modules(root: Path | None = None) -> tuple[str, ...]:
    """The modules of :data:`COMPILED_MODULES` this installation has as C extensions.

    Looked up on disk in the package's folder (``root``, by default the one this file is in), so nothing
    is imported: the interpreter prefers an extension module to a source file of the same name in one
    directory."""
    root = Path(__file__).parent if root is None else root
    found = []
    for name in COMPILED_MODULES:
        *parents, leaf = name.split(".")[1:]
        folder = root.joinpath(*parents)
        if any((folder / f"{leaf}{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            found.append(name)
    return tuple(found)


def describe(root: Path | None = None) -> str:
    """A few words for ``kubeloop --version`` and the benchmarks: which build this is."""
    count = len(compiled_modules(root))
    if count == 0:
        return "pure Python"
    return f"compiled with mypyc: {count} of {len(COMPILED_MODULES)} request-path modules"
