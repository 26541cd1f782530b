"""Start-up runs with the cyclic garbage collector paused, and always hands it back as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kubeloop.cli._startup import gc_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_off_inside_and_on_again_after_the_block() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_resume_turns_the_collector_on_before_the_block_ends() -> None:
    with gc_paused() as resume:
        resume()
        assert gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_the_collector_is_on_again_when_start_up_fails() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("start-up failed")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with gc_paused() as resume:
        resume()
        assert not gc.isenabled()
    assert not gc.isenabled()
