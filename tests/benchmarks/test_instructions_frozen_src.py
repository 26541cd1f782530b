"""benchmarks/instructions.py measures one frozen, compiled copy of a tree for both of its runs.

(Ir(2N) - Ir(N)) / N only cancels start-up when both runs import the same code with the same cached
bytecode: a module recompiled in one run only costs tens of millions of instructions.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _instructions() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_instructions", BENCHMARKS / "instructions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_frozen_src_is_a_compiled_copy_that_later_edits_do_not_reach(tmp_path: Path) -> None:
    bench = _instructions()
    package = tmp_path / "tree" / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("VALUE = 1\n")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"not bytecode")

    with bench.frozen_src(tmp_path / "tree") as frozen:
        copy = frozen / "src" / "pkg"
        (package / "mod.py").write_text("VALUE = 2\n")  # a merge into the measured tree meanwhile
        cached = {p.name for p in (copy / "__pycache__").iterdir()}
        assert f"mod.{sys.implementation.cache_tag}.pyc" in cached
        # The benchmark scripts are copied too: an edit of the script between runs cannot reach them.
        assert (frozen / "benchmarks" / "instructions.py").read_bytes() == (BENCHMARKS / "instructions.py").read_bytes()
        assert "stale.cpython-311.pyc" not in cached
        # What a run under the copy imports: the code as it was, from bytecode valid for its source.
        out = subprocess.run(
            [sys.executable, "-c", "import pkg.mod; print(pkg.mod.VALUE, pkg.mod.__cached__)"],
            env={"PYTHONPATH": str(frozen / "src"), "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True, text=True, check=True,
        ).stdout.split()
        assert out[0] == "1"
        # The bytecode is valid for the copy's source (the header's mtime and size, as the import checks).
        header = Path(out[1]).read_bytes()[8:16]
        source = (copy / "mod.py").stat()
        assert int.from_bytes(header[:4], "little") == int(source.st_mtime) & 0xFFFFFFFF
        assert int.from_bytes(header[4:], "little") == source.st_size
    assert not frozen.exists()


def test_frozen_src_without_a_tree_copies_the_importable_kubeloop() -> None:
    bench = _instructions()
    import kubeloop

    with bench.frozen_src(None) as frozen:
        copy = frozen / "src" / "kubeloop"
        assert (copy / "__init__.py").read_bytes() == Path(kubeloop.__file__).read_bytes()
        assert any((copy / "__pycache__").glob("__init__.*.pyc"))
