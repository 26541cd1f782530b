"""The runtime's unit tests (queues, rate limiters, caches...) run without an API server: the real
in-process cluster is a fixture of the modules that use it, not of the whole folder."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("fixture", ["cluster", "client"])
def test_the_real_cluster_is_not_a_folder_wide_fixture(request: pytest.FixtureRequest, fixture: str) -> None:
    with pytest.raises(pytest.FixtureLookupError):
        request.getfixturevalue(fixture)
