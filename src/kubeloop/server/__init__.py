"""kubeloop.server."""
