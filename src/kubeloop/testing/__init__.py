"""Public test support: fake time, an in-process cluster, fault injection, controller conformance checks."""

from kubeloop.testing._clock import FakeClock
from kubeloop.testing._cluster import InProcessCluster, eventually, owner_ref, resource
from kubeloop.testing._fault_app import FaultyApp, HttpFault, RecordedRequest
from kubeloop.testing._faults import Faults, InterceptedClient, RandomFaults, Write

__all__ = [
    "FakeClock",
    "Faults",
    "FaultyApp",
    "HttpFault",
    "InProcessCluster",
    "InterceptedClient",
    "RandomFaults",
    "RecordedRequest",
    "Write",
    "eventually",
    "owner_ref",
    "resource",
]
