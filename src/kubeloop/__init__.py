"""kubeloop: Kubernetes-style reconciliation that defends against the known production pitfalls.

Packages, in the order data flows (see DESIGN.md): ``api`` (shared vocabulary), ``store`` (MVCC
storage), ``server`` (the API server), ``client`` (talks to any API server), ``runtime`` (informers,
work queue, reconcile loop), ``controllers`` (built-in reconcilers), ``guard`` (safety tools),
``testing`` (harness and fakes) and ``cli``.
"""

__version__ = "0.1.0"
