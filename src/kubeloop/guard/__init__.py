"""kubeloop.guard: safety tools that work against any cluster through the client.

Cascade-delete preview and reviewed deletes: :func:`preview_delete` computes the :class:`Impact` of a
delete (everything the GC and the namespace controller would remove, orphan or keep, finalizers
that block, data at risk) from discovery and list calls; its plan id is a hash of that impact;
:func:`confirm_delete` executes a delete only while the impact still has the reviewed plan id,
approving protected objects (``kubeloop.dev/protect: "true"``) for exactly that delete.
"""

from kubeloop.guard._execute import DeleteOutcome, PlanChanged, confirm_delete, remaining, wait_for_impact
from kubeloop.guard._graph import APPROVED_ANNOTATION, PROTECT_ANNOTATION, Listed, compute_impact
from kubeloop.guard._impact import CASCADES, preview_delete
from kubeloop.guard._model import DataAtRisk, Entry, FinalizerNote, Impact, ObjectRef, Survivor
from kubeloop.guard._plan import ImpactDiff, PlanStore, default_plan_dir, diff_impacts, plan_id
from kubeloop.guard._render import confirm_command, render_impact
from kubeloop.guard._resolve import resolve_resource, split_target

__all__ = [
    "APPROVED_ANNOTATION",
    "CASCADES",
    "PROTECT_ANNOTATION",
    "DataAtRisk",
    "DeleteOutcome",
    "Entry",
    "FinalizerNote",
    "Impact",
    "ImpactDiff",
    "Listed",
    "ObjectRef",
    "PlanChanged",
    "PlanStore",
    "Survivor",
    "compute_impact",
    "confirm_command",
    "confirm_delete",
    "default_plan_dir",
    "diff_impacts",
    "plan_id",
    "preview_delete",
    "remaining",
    "render_impact",
    "resolve_resource",
    "split_target",
    "wait_for_impact",
]
