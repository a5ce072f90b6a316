"""Delegated authentication and authorization of the secure port, as kube-scheduler does them.

Upstream (k8s.io/apiserver v0.35.4): a bearer token is checked with a TokenReview
(``pkg/authentication/request/bearertoken``, ``authenticatorfactory/delegating.go``), a request
without one is ``system:anonymous``; then ``system:masters`` is allowed, the
``--authorization-always-allow-paths`` are allowed, and anything else asks the API server with a
SubjectAccessReview (``options/authorization.go``). Answers are cached (TokenReview 10 s; SAR
allowed 10 s, denied 10 s) so a scrape storm does not become an API storm; concurrent lookups of
one key share one request, as upstream's cached token authenticator does.

Not delegated here, on purpose: client certificates and front-proxy headers (upstream reads their
CAs from ``kube-system/extension-apiserver-authentication``, which needs more RBAC than the two
``create`` verbs this scheduler is granted). Tokens are what Prometheus sends.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import structlog

__all__ = [
    "ALWAYS_ALLOW_GROUPS",
    "ANONYMOUS",
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "AuthenticationError",
    "Decision",
    "DelegatingAuthenticator",
    "DelegatingAuthorizer",
    "ExpiringCache",
    "PathAuthorizer",
    "UserInfo",
    "api_reviews",
    "bearer_token",
]

log = structlog.get_logger("spread-scheduler")

# Upstream NewDelegatingAuthorizationOptions / NewDelegatingAuthenticationOptions defaults.
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = ("system:masters",)
AUTHENTICATION_CACHE_TTL = 10.0
AUTHORIZATION_ALLOWED_TTL = 10.0
AUTHORIZATION_DENIED_TTL = 10.0
# Upstream's webhook authorizer keeps 8192 SAR answers; the same bound for tokens.
CACHE_SIZE = 8192

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who made a request, as a TokenReview reports it."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True, slots=True)
class Decision:
    """A SubjectAccessReview's answer: ``reason`` ends upstream's "forbidden: ..." message."""

    allowed: bool
    reason: str = ""


class AuthenticationError(Exception):
    """The request carried a token and it did not authenticate (upstream answers 401)."""


class ExpiringCache(Generic[K, V]):
    """A bounded LRU whose entries expire, like apimachinery's ``LRUExpireCache``; single-threaded."""

    def __init__(self, size: int = CACHE_SIZE, clock: Callable[[], float] = time.monotonic) -> None:
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def add(self, key: K, value: V, ttl: float) -> None:
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


@dataclass
class _SingleFlight(Generic[K, V]):
    """Concurrent lookups of one key wait for the first one's answer."""

    _flights: dict[K, asyncio.Future[V]] = field(default_factory=dict)

    async def do(self, key: K, lookup: Callable[[], Awaitable[V]]) -> V:
        flight = self._flights.get(key)
        if flight is not None:
            return await asyncio.shield(flight)
        flight = asyncio.get_running_loop().create_future()
        self._flights[key] = flight
        try:
            value = await lookup()
        except BaseException as exc:
            flight.set_exception(exc)
            flight.exception()  # retrieved: nobody else may be waiting
            raise
        else:
            flight.set_result(value)
            return value
        finally:
            del self._flights[key]


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer`` header; None when there is none (then: anonymous)."""
    parts = (authorization or "").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class DelegatingAuthenticator:
    """Bearer token -> TokenReview (cached); no token -> anonymous; a token refused -> 401."""

    def __init__(
        self,
        review: Callable[[str], Awaitable[UserInfo | None]],
        *,
        ttl: float = AUTHENTICATION_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review = review
        self._ttl = ttl
        # Keyed by a hash: the cache never holds a usable token. A 1-tuple, so a refusal (None) is cached too.
        self._cache: ExpiringCache[bytes, tuple[UserInfo | None]] = ExpiringCache(clock=clock)
        self._flights: _SingleFlight[bytes, tuple[UserInfo | None]] = _SingleFlight()

    async def authenticate(self, authorization: str | None) -> UserInfo:
        token = bearer_token(authorization)
        if token is None:
            return ANONYMOUS
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is None:
            cached = await self._flights.do(key, lambda: self._lookup(key, token))
        if cached[0] is None:
            raise AuthenticationError("invalid bearer token")  # upstream's bearertoken error text
        return cached[0]

    async def _lookup(self, key: bytes, token: str) -> tuple[UserInfo | None]:
        if (cached := self._cache.get(key)) is not None:
            return cached
        try:
            user = await self._review(token)
        except Exception as exc:  # the API server away: upstream answers 401 and does not cache
            log.error("Unable to authenticate the request", err=str(exc))
            raise AuthenticationError(str(exc)) from exc
        if user is not None and AUTHENTICATED_GROUP not in user.groups:
            # upstream's AuthenticatedGroupAdder
            user = UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)
        self._cache.add(key, (user,), self._ttl)  # refusals too: upstream caches both for the same TTL
        return (user,)


class PathAuthorizer:
    """``--authorization-always-allow-paths``: exact paths, or prefixes ending in ``*``; a leading / is optional."""

    def __init__(self, always_allow_paths: Sequence[str]) -> None:
        self.paths: set[str] = set()
        self.prefixes: list[str] = []
        for raw in always_allow_paths:
            path = raw.removeprefix("/")
            if "*" in path[:-1]:
                raise ValueError(f"only trailing * allowed in {path!r}")
            if path.endswith("*"):
                self.prefixes.append(path[:-1])
            else:
                self.paths.add(path)

    def allows(self, path: str) -> bool:
        path = path.removeprefix("/")
        return path in self.paths or any(path.startswith(prefix) for prefix in self.prefixes)


class DelegatingAuthorizer:
    """system:masters, then the always-allowed paths, then a SubjectAccessReview (cached)."""

    def __init__(
        self,
        review: Callable[[UserInfo, str, str], Awaitable[Decision]],
        always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        *,
        allowed_ttl: float = AUTHORIZATION_ALLOWED_TTL,
        denied_ttl: float = AUTHORIZATION_DENIED_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review = review
        self._paths = PathAuthorizer(always_allow_paths)
        self._allowed_ttl = allowed_ttl
        self._denied_ttl = denied_ttl
        self._cache: ExpiringCache[tuple[UserInfo, str, str], Decision] = ExpiringCache(clock=clock)
        self._flights: _SingleFlight[tuple[UserInfo, str, str], Decision] = _SingleFlight()

    async def authorize(self, user: UserInfo, verb: str, path: str) -> Decision:
        """Raises when the SAR could not be made (upstream answers 500, and caches nothing)."""
        if any(group in ALWAYS_ALLOW_GROUPS for group in user.groups) or self._paths.allows(path):
            return Decision(allowed=True)
        key = (user, verb, path)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        return await self._flights.do(key, lambda: self._lookup(key))

    async def _lookup(self, key: tuple[UserInfo, str, str]) -> Decision:
        if (cached := self._cache.get(key)) is not None:
            return cached
        decision = await self._review(*key)
        self._cache.add(key, decision, self._allowed_ttl if decision.allowed else self._denied_ttl)
        return decision


def forbidden_message(user: UserInfo, verb: str, path: str, reason: str) -> str:
    """Upstream's ``ForbiddenStatusError`` text for a non-resource request."""
    message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
    return f"{message}: {reason}" if reason else message


def api_reviews(
    api: Any,
) -> tuple[Callable[[str], Awaitable[UserInfo | None]], Callable[[UserInfo, str, str], Awaitable[Decision]]]:
    """TokenReview and SubjectAccessReview through a ``kubernetes.aio`` client (created on the caller's loop)."""
    from kubernetes.aio import client  # noqa: PLC0415 - the pure parts above stay importable without it

    authn, authz = client.AuthenticationV1Api(api), client.AuthorizationV1Api(api)

    async def token_review(token: str) -> UserInfo | None:
        review = await authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
        status = review.status
        if status is None or not status.authenticated or status.user is None:
            if status is not None and status.error:
                log.info("token refused by TokenReview", err=status.error)
            return None
        user = status.user
        extra = tuple(sorted((k, tuple(v)) for k, v in (user.extra or {}).items()))
        return UserInfo(user.username or "", user.uid or "", tuple(user.groups or ()), extra)

    async def subject_access_review(user: UserInfo, verb: str, path: str) -> Decision:
        spec = client.V1SubjectAccessReviewSpec(
            user=user.name,
            uid=user.uid,
            groups=list(user.groups),
            extra={k: list(v) for k, v in user.extra},
            non_resource_attributes=client.V1NonResourceAttributes(path=path, verb=verb),
        )
        review = await authz.create_subject_access_review(client.V1SubjectAccessReview(spec=spec))
        status = review.status
        if status is None:
            return Decision(allowed=False)
        if status.evaluation_error and not status.allowed:
            log.info("SubjectAccessReview evaluation error", err=status.evaluation_error)
        # Denied or no opinion: both forbid (the last authorizer in upstream's union).
        return Decision(allowed=bool(status.allowed and not status.denied), reason=status.reason or "")

    return token_review, subject_access_review
