"""kubeloop.controllers: the built-in controllers, reaching the API only through ``kubeloop.client``.

:class:`GarbageCollector` (ownerReferences, Background/Foreground/Orphan propagation),
:class:`NamespaceController` (namespace deletion), and the registry the controller manager uses to
start them: :data:`BUILTIN_CONTROLLERS` and :func:`add_builtin_controllers`.
"""

from kubeloop.controllers._gc import GarbageCollector

__all__ = [
    "GarbageCollector",
]
