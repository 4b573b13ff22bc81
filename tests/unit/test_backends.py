"""The three cassette backends meet one Protocol; RecordMissing asks replay whether it is
playing through its public property."""

from __future__ import annotations

import pytest

from pytest_cardprobe.wire.cassettes.modes import RECORD_MODES, Backend, backend_for
from pytest_cardprobe.wire.cassettes.replay import Replay


@pytest.mark.parametrize("mode", RECORD_MODES)
def test_every_record_mode_gives_a_backend(mode: str) -> None:
    backend = backend_for(mode)
    assert isinstance(backend, Backend)
    assert backend.live is (mode != "none")


def test_a_backend_missing_a_member_is_none() -> None:
    class Half:
        live = False

        def player(self) -> None:
            return None

    assert not isinstance(Half(), Backend)


def test_record_missing_plays_only_while_a_replay_cassette_is_open() -> None:
    backend = backend_for("once")
    assert not Replay().playing
    assert backend.player()("POST", "/api/chat", "{}") is None  # recorded: to the network
