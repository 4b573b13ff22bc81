"""Before the first test of a live run: every server answers and has every requested model.

One usage error lists every problem, so a model that is not pulled or a server that is down
costs one message instead of one failed test (and its retries) per test.
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.wire.client import ChatClient
from pytest_cardprobe.wire.errors import ClientError, InfraError, ModelNotFound
from pytest_cardprobe.wire.identity import model_identity

PREFLIGHT_TIMEOUT = 10.0


def problems(settings: Settings) -> list[str]:
    """What stops a live run: unreachable servers and models a server does not have."""
    found: list[str] = []
    for server in settings.servers:
        # The headers and bearer token of every other request (a gateway that wants them
        # must let the preflight through), with a short timeout and no retries.
        client = ChatClient(
            dataclasses.replace(
                settings.client_settings(server),
                timeout=min(PREFLIGHT_TIMEOUT, settings.timeout),
                retries=0,
            )
        )
        try:
            for model in settings.models:
                try:
                    model_identity(client, model)
                except ModelNotFound as exc:
                    found.append(str(exc))
                except InfraError as exc:
                    found.append(
                        f"server {client.shown_url} does not answer ({exc}); start it, or fix "
                        "--cardprobe-server / cardprobe_servers"
                    )
                    break  # one message per server, not one per model
                except ClientError as exc:
                    found.append(
                        f"server {client.shown_url} refused to describe model {model!r}: {exc}"
                    )
        finally:
            client.close()
    return found


def check(settings: Settings, collect_only: bool = False) -> None:
    """Raise one :class:`pytest.UsageError` naming every problem; nothing has been recorded."""
    if not settings.live or not settings.models or collect_only:
        return
    found = problems(settings)
    if found:
        # Server text (error bodies, listed model names) reaches the terminal escaped.
        lines = "\n".join(f"  - {escape_control(p)}" for p in found)
        raise pytest.UsageError(
            f"cardprobe preflight: the live run cannot start (nothing was asked or recorded):\n"
            f"{lines}"
        )
