"""A cache in front of a bearer-token authenticator, as kube-apiserver puts one in front of its token authenticators.

Upstream 1.32: ``pkg/kubeapiserver/authenticator/config.go`` wraps the union of the token
authenticators (token file, ServiceAccount tokens, ...) in ``token/cache.New(tokenAuth, true,
TokenSuccessCacheTTL, TokenFailureCacheTTL)``, with ``pkg/kubeapiserver/options/authentication.go``
defaulting those to 10 s and 0 s; ``staging/src/k8s.io/apiserver/pkg/authentication/token/cache/
cached_token_authenticator.go`` does the caching. What that gives, and what :class:`CachedTokenAuthenticator`
guarantees:

- A token that authenticated is answered from the cache, with the same user, for ``success_ttl``
  seconds (10) of the injected clock after the lookup that admitted it: within that time nothing is
  checked again (not the signature, not the expiry, not whether the bound Pod, Secret, Node or the
  ServiceAccount still exist), so a token outlives its deleted bound object by up to 10 s, as upstream's.
- A token that did not authenticate, and a lookup that raised, are not cached (failure TTL 0): the
  next request checks again.
- The key is an HMAC-SHA256, under a random per-process key, of the length-prefixed token and
  audiences (upstream's ``keyFunc``): the cache keeps no token, and a token checked against other
  audiences is a different entry.
- Concurrent lookups of one key share one check (upstream's ``singleflight``).
- Size: bounded by the TTL only, as upstream's. ``cached_token_authenticator.go`` stores entries in
  ``newStripedCache(32, fnvHashFunc, newSimpleCache)``, whose stripes are ``utilcache.Expiring`` maps
  (apimachinery ``pkg/util/cache/expiring.go``) with no size limit: the striped LRU of 32 x 128 entries
  (``newSimpleCache(128, clock)``) is older upstream's. Like ``Expiring.Set``, which collects the expired
  entries on every insert, each new entry here drops the expired ones first; with one TTL for every
  entry they are the oldest, so the cache holds at most the tokens admitted within the last ``success_ttl``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import struct
from collections import OrderedDict
from collections.abc import Callable, Sequence

from kubeloop.api import Clock, SystemClock
from kubeloop.server._authn import User
from kubeloop.server._authz_chain import TokenAuthenticator

__all__ = ["SUCCESS_TTL_SECONDS", "CachedTokenAuthenticator"]

SUCCESS_TTL_SECONDS = 10.0  # upstream's TokenSuccessCacheTTL default


def _length_prefixed(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">I", len(data)) + data


class CachedTokenAuthenticator:
    """Wraps ``authenticate`` (token -> user or ``None``); see the module docstring for the contract."""

    def __init__(
        self,
        authenticate: TokenAuthenticator,
        *,
        audiences: Sequence[str] = (),
        clock: Clock | None = None,
        success_ttl: float = SUCCESS_TTL_SECONDS,
        hmac_key: bytes | None = None,
    ) -> None:
        self._authenticate = authenticate
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._success_ttl = success_ttl
        self._hmac_key = hmac_key if hmac_key is not None else secrets.token_bytes(32)
        self._audience_suffix = struct.pack(">I", len(audiences)) + b"".join(_length_prefixed(a) for a in audiences)
        # key -> (user, expiry on the clock's monotonic time), oldest first.
        self._entries: OrderedDict[bytes, tuple[User, float]] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Future[User | None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def _key(self, token: str) -> bytes:
        return hmac.new(self._hmac_key, _length_prefixed(token) + self._audience_suffix, hashlib.sha256).digest()

    async def __call__(self, token: str) -> User | None:
        key = self._key(token)
        now = self._clock.monotonic()
        hit = self._entries.get(key)
        if hit is not None:
            if now < hit[1]:
                return hit[0]
            del self._entries[key]
        shared = self._inflight.get(key)
        if shared is None:
            shared = asyncio.ensure_future(self._lookup(key, token))
            self._inflight[key] = shared
            shared.add_done_callback(self._finished(key))
        # shield: one caller giving up (its request cancelled) does not cancel the others' lookup.
        return await asyncio.shield(shared)

    def _finished(self, key: bytes) -> Callable[[asyncio.Future[User | None]], None]:
        def done(future: asyncio.Future[User | None]) -> None:
            self._inflight.pop(key, None)
            if not future.cancelled():
                future.exception()  # retrieved: every waiter may have gone; those left still get it
        return done

    async def _lookup(self, key: bytes, token: str) -> User | None:
        user = await self._authenticate(token)
        if user is not None and self._success_ttl > 0:
            self._remember(key, user, self._clock.monotonic() + self._success_ttl)
        return user

    def _remember(self, key: bytes, user: User, expires: float) -> None:
        entries = self._entries
        entries.pop(key, None)
        entries[key] = (user, expires)
        now = self._clock.monotonic()
        while entries:  # the expired ones, oldest first (Expiring.Set's gc)
            oldest_key, (_, oldest_expiry) = next(iter(entries.items()))
            if oldest_expiry > now:
                break
            del entries[oldest_key]
