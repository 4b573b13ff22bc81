"""Per-server request slots: at most N in flight per server across processes."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest

from pytest_cardprobe.wire.slots import SlotDirRefused, private_dir, server_slot, slot_dir


def _hold(server: str, parallel: int, directory: str, log: str, hold: float) -> None:
    with server_slot(server, parallel, Path(directory)):
        with open(log, "a") as f:
            f.write(f"in {time.monotonic()}\n")
        time.sleep(hold)
        with open(log, "a") as f:
            f.write(f"out {time.monotonic()}\n")


def most_in_flight(log: Path) -> int:
    events = sorted(
        (float(t), kind) for kind, t in (line.split() for line in log.read_text().splitlines())
    )
    now = peak = 0
    for _, kind in events:
        now += 1 if kind == "in" else -1
        peak = max(peak, now)
    return peak


def run(tmp_path: Path, parallel: int, processes: int, server: str = "http://s:1") -> int:
    log = tmp_path / f"log-{parallel}-{server[-1]}"
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_hold, args=(server, parallel, str(tmp_path), str(log), 0.2))
        for _ in range(processes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(20)
        assert p.exitcode == 0
    return most_in_flight(log)


def test_one_slot_means_one_request_at_a_time(tmp_path: Path) -> None:
    assert run(tmp_path, parallel=1, processes=4) == 1


def test_two_slots_allow_two_and_no_more(tmp_path: Path) -> None:
    assert run(tmp_path, parallel=2, processes=5) == 2


def test_servers_have_separate_slots(tmp_path: Path) -> None:
    with server_slot("http://a:1", 1, tmp_path):
        started = time.monotonic()
        with server_slot("http://b:1", 1, tmp_path) as waited:
            assert waited < 0.5
        assert time.monotonic() - started < 0.5


def test_waiting_time_is_reported_and_not_spent_inside_the_request(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    holder = ctx.Process(
        target=_hold, args=("http://c:1", 1, str(tmp_path), str(tmp_path / "l"), 0.5)
    )
    holder.start()
    time.sleep(0.2)
    with server_slot("http://c:1", 1, tmp_path) as waited:
        assert waited >= 0.2  # the wait happened before the slot was ours
    holder.join(10)


# ------------------------------------------------------------------ one folder per user


def test_the_slot_folder_is_per_user_and_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert slot_dir() == tmp_path / f"cardprobe-slots-{os.getuid()}"
    with server_slot("http://s:1", 1):
        pass
    assert stat.S_IMODE(slot_dir().stat().st_mode) == 0o700
    runtime = tmp_path / "run"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert slot_dir() == runtime / "cardprobe-slots"


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_an_xdg_runtime_dir_of_another_user_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``su``/``sudo -E`` pass on the first user's XDG_RUNTIME_DIR; it is not ours to use."""
    runtime = tmp_path / "run-of-another-user"
    runtime.mkdir(mode=0o700)
    os.chown(runtime, 65534, 65534)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert slot_dir() == tmp_path / f"cardprobe-slots-{os.getuid()}"
    with server_slot("http://s:1", 1):
        pass


def test_a_slot_folder_open_to_others_is_repaired(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    folder.mkdir()
    folder.chmod(0o777)
    with server_slot("http://s:1", 1, folder):
        pass
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_slot_folder_of_another_user_or_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "slots"
    link.symlink_to(target)
    with pytest.raises(SlotDirRefused, match="is not a folder"):
        private_dir(link)
    if os.geteuid() == 0:
        os.chown(target, 4242, 4242)
        with pytest.raises(SlotDirRefused, match="belongs to uid 4242, not to this user"):
            private_dir(target)


def _second_user(shared_tmp: str, result: str) -> None:
    """A second user's live run: another uid, the same temporary folder."""
    os.setgid(4343)
    os.setuid(4343)
    os.environ.pop("XDG_RUNTIME_DIR", None)
    tempfile.tempdir = shared_tmp
    try:
        with server_slot("http://s:1", 1):
            Path(result, "ok").write_text(str(slot_dir()))
    except OSError as exc:
        Path(result, "error").write_text(repr(exc))


@pytest.mark.skipif(os.geteuid() != 0, reason="simulating a second user needs root")
def test_a_second_user_on_the_machine_gets_their_own_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    # A folder both users can reach, like /tmp (pytest's own tmp_path is private to root).
    shared = Path(tempfile.mkdtemp(prefix="cardprobe-two-users-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        result = shared / "result"
        result.mkdir(mode=0o777)
        result.chmod(0o777)
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        monkeypatch.setattr(tempfile, "tempdir", str(shared))
        with server_slot("http://s:1", 1):  # the first user's run holds its slot meanwhile
            child = multiprocessing.get_context("fork").Process(
                target=_second_user, args=(str(shared), str(result))
            )
            child.start()
            child.join(20)
        assert not (result / "error").exists(), (result / "error").read_text()
        assert (result / "ok").read_text() == str(shared / "cardprobe-slots-4343")
        assert (shared / f"cardprobe-slots-{os.getuid()}").is_dir()
    finally:
        shutil.rmtree(shared)
