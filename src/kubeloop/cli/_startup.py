"""Start-up helpers shared by both ``kubeloop up`` processes (the API server and the controller manager).

:func:`gc_paused` runs a block with the cyclic garbage collector off. Start-up is mostly allocation that
stays alive (modules, classes, informers), so the young-generation collections it would trigger walk live
objects for nothing. The block gets a callback that turns the collector back on early (the API server:
once it has forked the controller manager; the controller manager: once it is ready); leaving the block
does it too, and either way the collector ends as it was found (on again only if it was on). Garbage
made while it is off is collected once it is back on.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[Callable[[], None]]:
    """The collector off inside the block; call the yielded function to turn it back on earlier."""
    was_enabled = gc.isenabled()
    gc.disable()

    def resume() -> None:
        if was_enabled:
            gc.enable()

    try:
        yield resume
    finally:
        resume()
