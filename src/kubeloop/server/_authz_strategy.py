"""Registry rules of the RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding).

Upstream validates RBAC object names as path segments, not DNS subdomains
(k/k ``pkg/apis/rbac/validation`` ``ValidateRBACName`` = apimachinery ``path.IsValidPathSegmentName``):
any name but ``.`` and ``..`` without ``/`` or ``%``, which is what lets the bootstrap roles be named
``system:discovery``. Everything else is the generic strategy.
"""

from __future__ import annotations

from kubeloop.server._strategy import GenericStrategy

__all__ = ["RbacStrategy", "path_segment_name_errors"]


def path_segment_name_errors(name: str, prefix: bool = False) -> list[str]:
    """apimachinery ``path.IsValidPathSegmentName`` (``prefix`` is ignored, as upstream)."""
    for illegal in (".", ".."):
        if name == illegal:
            return [f"may not be '{illegal}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


class RbacStrategy(GenericStrategy):
    name_validator = staticmethod(path_segment_name_errors)
