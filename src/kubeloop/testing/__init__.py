"""Public test support: fake time, an in-process cluster, fault injection, controller conformance checks."""

from kubeloop.testing._clock import FakeClock

__all__ = ["FakeClock"]
