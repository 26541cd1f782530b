"""kubeloop.runtime."""
