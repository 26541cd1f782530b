"""Public test support: fake time, an in-process cluster, fault injection, controller conformance checks.

The conformance checks (:func:`grade`) run a user's controller against an in-process cluster and
report, check by check, whether it is idempotent, tolerates lost updates, backs off instead of
hot-looping, keeps its status honest and owns what it creates. The pytest plugin
(:mod:`kubeloop.testing.plugin`, entry point ``kubeloop``) offers them as fixtures.
"""

from kubeloop.testing._clock import FakeClock
from kubeloop.testing._cluster import InProcessCluster, eventually, owner_ref, resource
from kubeloop.testing._fault_app import FaultyApp, HttpFault, RecordedRequest
from kubeloop.testing._faults import Faults, InterceptedClient, RandomFaults, Write
from kubeloop.testing._grade import CHECKS, GradeOptions, grade
from kubeloop.testing._stored import rewrite_stored, store_as_is
from kubeloop.testing._subject import CheckResult, ControllerUnderTest, Expect, Report, Scenario
from kubeloop.testing._traffic import Conflicts, ControllerTraffic, Exchange, Failing

__all__ = [
    "CHECKS",
    "CheckResult",
    "Conflicts",
    "ControllerTraffic",
    "ControllerUnderTest",
    "Exchange",
    "Expect",
    "Failing",
    "FakeClock",
    "Faults",
    "FaultyApp",
    "GradeOptions",
    "HttpFault",
    "InProcessCluster",
    "InterceptedClient",
    "RandomFaults",
    "RecordedRequest",
    "Report",
    "Scenario",
    "Write",
    "eventually",
    "grade",
    "owner_ref",
    "resource",
    "rewrite_stored",
    "store_as_is",
]
