"""kubeloop.server: the Kubernetes-compatible API server as a plain ASGI app.

:func:`create_app` builds an :class:`App` over a :class:`~kubeloop.store.Store`. Seams for the
other parts of the server: ``app.kinds`` (the served :class:`~kubeloop.api.KindRegistry`),
``app.admission`` (:class:`Admission` plugins), ``app.validators``, ``app.add_route``,
``app.ready``; :func:`parse_request_info` gives authorization the same view of a request.
"""

from kubeloop._tls import TlsMaterial, ensure_ca, ensure_tls, server_ssl_context  # the server's TLS material
from kubeloop.server._admission import Admission, AdmissionAttributes, NamespaceLifecycle
from kubeloop.server._app import ENVTEST_DISABLED_ADMISSION_PLUGINS, SYSTEM_NAMESPACES, App, create_app

# Security: TLS material, authentication, impersonation, RBAC, self reviews.
from kubeloop.server._authn import (
    ADMIN_USER,
    ANONYMOUS,
    CONTROLLER_MANAGER_USER,
    USER_SCOPE_KEY,
    AuthenticationMiddleware,
    User,
    ensure_token_file,
    load_token_file,
)
from kubeloop.server._authz import (
    AllowAll,
    Attributes,
    AuthorizationMiddleware,
    Authorizer,
    Decision,
    RuleResolver,
    forbidden_error,
    request_attributes,
)
from kubeloop.server._authz_bootstrap import bootstrap_rbac_objects
from kubeloop.server._authz_chain import secure
from kubeloop.server._authz_escalation import RbacEscalationCheck
from kubeloop.server._authz_impersonate import ImpersonationMiddleware
from kubeloop.server._authz_rbac import RbacAuthorizer, store_rbac_authorizer
from kubeloop.server._authz_reviews import SelfReviewMiddleware
from kubeloop.server._default_tolerations import DefaultTolerationSeconds
from kubeloop.server._http import MAX_BODY_BYTES, Request
from kubeloop.server._limit_ranger import LimitRanger
from kubeloop.server._priority_admission import Priority
from kubeloop.server._protection import (
    APPROVED_ANNOTATION,
    PROTECT_ANNOTATION,
    DeletionProtection,
    deletion_refusal,
    protection_webhook_app,
)
from kubeloop.server._quota_admission import ResourceQuotaAdmission
from kubeloop.server._requestinfo import RequestInfo, parse_request_info
from kubeloop.server._service_account_admission import ServiceAccountAdmission
from kubeloop.server._state import ServerState, collection_prefix, object_key
from kubeloop.server._token_cache import CachedTokenAuthenticator

__all__ = [
    "ADMIN_USER",
    "ANONYMOUS",
    "APPROVED_ANNOTATION",
    "CONTROLLER_MANAGER_USER",
    "ENVTEST_DISABLED_ADMISSION_PLUGINS",
    "MAX_BODY_BYTES",
    "PROTECT_ANNOTATION",
    "SYSTEM_NAMESPACES",
    "USER_SCOPE_KEY",
    "Admission",
    "AdmissionAttributes",
    "AllowAll",
    "App",
    "Attributes",
    "AuthenticationMiddleware",
    "AuthorizationMiddleware",
    "Authorizer",
    "CachedTokenAuthenticator",
    "Decision",
    "DefaultTolerationSeconds",
    "DeletionProtection",
    "ImpersonationMiddleware",
    "LimitRanger",
    "NamespaceLifecycle",
    "Priority",
    "RbacAuthorizer",
    "RbacEscalationCheck",
    "Request",
    "RequestInfo",
    "ResourceQuotaAdmission",
    "RuleResolver",
    "SelfReviewMiddleware",
    "ServerState",
    "ServiceAccountAdmission",
    "TlsMaterial",
    "User",
    "bootstrap_rbac_objects",
    "collection_prefix",
    "create_app",
    "deletion_refusal",
    "ensure_ca",
    "ensure_tls",
    "ensure_token_file",
    "forbidden_error",
    "load_token_file",
    "object_key",
    "parse_request_info",
    "protection_webhook_app",
    "request_attributes",
    "secure",
    "server_ssl_context",
    "store_rbac_authorizer",
]
