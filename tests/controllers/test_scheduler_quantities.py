"""The scheduler and volume binder read quantities as the API server now stores them (canonical form,
kubeloop.api._quantity): every canonical spelling reads as its value, so a pod asking ``1000m`` fits a
node offering ``1`` exactly as before."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeloop.api._quantity import parse_quantity as parse_exact
from kubeloop.controllers._scheduler_resources import parse_quantity, pod_requests

texts = st.builds(
    lambda whole, frac, suffix: f"{whole}{frac}{suffix}",
    st.text(alphabet="0123456789", min_size=1, max_size=12),
    st.sampled_from(["", ".5", ".25", ".001", ".0000000001"]),
    st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "e-3", "E"]),
)


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_canonical_text_reads_as_its_value(text: str) -> None:
    exact = parse_exact(text)
    assert parse_quantity(exact.text) == pytest.approx(float(exact.value), rel=1e-12)


@pytest.mark.parametrize("text", ["107374182400m", "1e21", "1e-9", "80e-3", "1536Mi", "9223372036854775807"])
def test_canonical_spellings_the_scheduler_meets(text: str) -> None:
    assert parse_quantity(text) == pytest.approx(float(parse_exact(text).value), rel=1e-12)


def test_pod_requests_of_canonical_spec() -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1536Mi"}}},
                                   {"name": "d", "resources": {"requests": {"cpu": "500m"}}}],
                    "overhead": {"cpu": "250m"}}}
    assert pod_requests(pod) == {"cpu": 1.75, "memory": 1536 * 2**20}
