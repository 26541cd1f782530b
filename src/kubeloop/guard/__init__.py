"""kubeloop.guard."""
