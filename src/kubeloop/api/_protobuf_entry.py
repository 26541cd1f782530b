"""The protobuf request-body decoder as :mod:`kubeloop.api` exports it: the media type, and
:func:`decode_protobuf_object`, which loads the decoder (:mod:`kubeloop.api._protobuf`, its wire reader
and the message tables of every kind it knows) on its first call.

Only a request whose body is protobuf needs the decoder (kubectl's typed ``create`` commands, ``auth
can-i``); importing :mod:`kubeloop.api` does not load it, so neither process of ``kubeloop up`` pays for
it at start-up (``tests/cli/test_startup_imports.py`` holds that). The contract of the decode is the
decoder's own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROTOBUF_MEDIA_TYPE", "decode_protobuf_object"]

PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


def decode_protobuf_object(body: bytes) -> dict[str, Any]:
    """:func:`kubeloop.api._protobuf.decode_protobuf_object`, imported on first use."""
    from kubeloop.api._protobuf import decode_protobuf_object as decode

    return decode(body)
