"""kubeloop.controllers."""
