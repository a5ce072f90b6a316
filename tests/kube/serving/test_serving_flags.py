"""``run``'s secure-serving flags: bad values are refused by name before anything connects."""

from __future__ import annotations

import pytest

from scheduler import cli
from tests.helpers import command_failed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--health-address", "0.0.0.0:10251"],
            "--health-address was removed: /healthz, /livez, /readyz and /metrics are served over HTTPS on "
            "--bind-address and --secure-port (default 0.0.0.0:10259)",
            id="health-address-removed",
        ),
        pytest.param(
            ["--secure-port", "70000"],
            "--secure-port 70000 must be between 0 and 65535, inclusive. 0 for turning off secure port",
            id="port-out-of-range",
        ),
        pytest.param(
            ["--authorization-always-allow-paths", "/healthz,/a*b"],
            "--authorization-always-allow-paths: only trailing * allowed in 'a*b'",
            id="star-inside-a-path",
        ),
    ],
)
def test_bad_serving_flags_exit_2_naming_the_flag(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", *args]) == 2
    assert message in command_failed(capsys.readouterr().err)


def test_bind_address_must_be_an_ip(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--bind-address", "localhost"])
    assert exited.value.code == 2
    assert "argument --bind-address: failed to parse IP: 'localhost'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(["--tls-cert-file", "/no/such.crt"], "missing filename for serving cert", id="cert-without-key"),
        pytest.param(
            ["--tls-cert-file", "/no/such.crt", "--tls-private-key-file", "/no/such.key"],
            "No such file or directory",
            id="unreadable-pair",
        ),
    ],
)
def test_an_unusable_certificate_exits_1_before_connecting(
    args: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No kubeconfig exists here: reaching the API client would fail differently."""
    assert cli.main(["run", "--kubeconfig", "/no/such/kubeconfig", *args]) == 1
    err = command_failed(capsys.readouterr().err)
    assert err.startswith("unable to load --tls-cert-file/--tls-private-key-file: ") and error in err
