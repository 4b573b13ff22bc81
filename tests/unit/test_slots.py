"""Per-server request slots: at most N in flight per server across processes."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from pytest_cardprobe.wire.slots import server_slot


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
