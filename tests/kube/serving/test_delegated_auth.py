"""Delegated authentication/authorization of the secure port: upstream's decisions and its caching."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.kube.serving.delegated_auth import (
    ANONYMOUS,
    AuthenticationError,
    Decision,
    DelegatingAuthenticator,
    DelegatingAuthorizer,
    PathAuthorizer,
    UserInfo,
    bearer_token,
    forbidden_message,
)
from tests.fakes import FakeClock

ALICE = UserInfo("alice", "uid-1", ("team",))


class TokenReviews:
    """A fake TokenReview: ``good`` authenticates as alice, anything else is refused; counts calls."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[str] = []
        self.fail = fail

    async def __call__(self, token: str) -> UserInfo | None:
        self.calls.append(token)
        await asyncio.sleep(0)  # a real review awaits the network: let concurrent lookups pile up
        if self.fail:
            raise ConnectionError("connection refused")
        return ALICE if token == "good" else None


class AccessReviews:
    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.calls: list[tuple[str, str, str]] = []

    async def __call__(self, user: UserInfo, verb: str, path: str) -> Decision:
        self.calls.append((user.name, verb, path))
        return Decision(allowed=user.name in self.allowed, reason="" if user.name in self.allowed else "no rule")


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param(None, None, id="no-header"),
        pytest.param("Bearer abc", "abc", id="bearer"),
        pytest.param("bearer abc", "abc", id="scheme-case-insensitive"),
        pytest.param("  Bearer abc  ", "abc", id="surrounding-space"),
        pytest.param("Bearer  abc", None, id="space-before-token-is-empty"),
        pytest.param("Basic abc", None, id="other-scheme"),
        pytest.param("Bearer", None, id="no-token"),
    ],
)
def test_bearer_token_is_parsed_as_upstream(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_no_token_is_anonymous_without_a_review() -> None:
    reviews = TokenReviews()
    user = asyncio.run(DelegatingAuthenticator(reviews).authenticate(None))
    assert user == ANONYMOUS and reviews.calls == []


def test_a_reviewed_token_gains_the_authenticated_group() -> None:
    user = asyncio.run(DelegatingAuthenticator(TokenReviews()).authenticate("Bearer good"))
    assert user.name == "alice" and user.groups == ("team", "system:authenticated")


def test_token_answers_are_cached_for_the_ttl_refusals_too() -> None:
    clock, reviews = FakeClock(), TokenReviews()
    authn = DelegatingAuthenticator(reviews, ttl=10.0, clock=clock)

    async def main() -> None:
        for _ in range(3):
            await authn.authenticate("Bearer good")
            with pytest.raises(AuthenticationError, match="invalid bearer token"):
                await authn.authenticate("Bearer bad")
        assert reviews.calls == ["good", "bad"]
        clock.now += 10.0
        await authn.authenticate("Bearer good")
        assert reviews.calls == ["good", "bad", "good"]

    asyncio.run(main())


def test_concurrent_lookups_of_one_token_make_one_review() -> None:
    reviews = TokenReviews()
    authn = DelegatingAuthenticator(reviews)

    async def main() -> list[UserInfo]:
        return await asyncio.gather(*(authn.authenticate("Bearer good") for _ in range(20)))

    assert {u.name for u in asyncio.run(main())} == {"alice"}
    assert reviews.calls == ["good"]


def test_a_failed_review_is_401_and_not_cached() -> None:
    reviews = TokenReviews(fail=True)
    authn = DelegatingAuthenticator(reviews)

    async def main() -> None:
        for _ in range(2):
            with pytest.raises(AuthenticationError, match="connection refused"):
                await authn.authenticate("Bearer good")

    asyncio.run(main())
    assert reviews.calls == ["good", "good"]


@pytest.mark.parametrize(
    ("paths", "path", "allowed"),
    [
        pytest.param(["/healthz"], "/healthz", True, id="exact"),
        pytest.param(["healthz"], "/healthz", True, id="leading-slash-optional"),
        pytest.param(["/healthz"], "/healthz/ping", False, id="exact-is-not-prefix"),
        pytest.param(["/debug/*"], "/debug/pprof", True, id="prefix"),
        pytest.param(["/"], "/", True, id="root"),
        pytest.param(["/"], "/metrics", False, id="root-is-exact"),
    ],
)
def test_always_allow_paths_match_as_upstream(paths: list[str], path: str, allowed: bool) -> None:
    assert PathAuthorizer(paths).allows(path) is allowed


def test_a_star_not_at_the_end_is_refused_with_upstreams_message() -> None:
    with pytest.raises(ValueError, match=r"only trailing \* allowed in 'a\*b'"):
        PathAuthorizer(["/a*b"])


def test_authorization_order_masters_paths_then_sar() -> None:
    sar = AccessReviews(allowed={"alice"})
    authz = DelegatingAuthorizer(sar)
    master = UserInfo("root", groups=("system:masters",))

    async def main() -> list[Decision]:
        return [
            await authz.authorize(ANONYMOUS, "get", "/healthz"),
            await authz.authorize(master, "get", "/metrics"),
            await authz.authorize(ALICE, "get", "/metrics"),
            await authz.authorize(ANONYMOUS, "get", "/metrics"),
        ]

    assert [d.allowed for d in asyncio.run(main())] == [True, True, True, False]
    assert sar.calls == [("alice", "get", "/metrics"), ("system:anonymous", "get", "/metrics")]


def test_sar_answers_are_cached_allowed_and_denied_for_their_ttls() -> None:
    clock, sar = FakeClock(), AccessReviews(allowed={"alice"})
    authz = DelegatingAuthorizer(sar, allowed_ttl=10.0, denied_ttl=5.0, clock=clock)

    async def ask() -> None:
        await authz.authorize(ALICE, "get", "/metrics")
        await authz.authorize(ANONYMOUS, "get", "/metrics")

    asyncio.run(ask())
    asyncio.run(ask())
    assert len(sar.calls) == 2
    clock.now += 5.0  # the denial expired, the allowance did not
    asyncio.run(ask())
    assert sar.calls[2:] == [("system:anonymous", "get", "/metrics")]


def test_forbidden_message_is_upstreams() -> None:
    assert forbidden_message(ANONYMOUS, "get", "/metrics", "") == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    assert forbidden_message(ALICE, "get", "/x", "no rule") == 'forbidden: User "alice" cannot get path "/x": no rule'
