"""Runs that update one baseline at the same time take turns: no run's arms are lost, and no
run removes the temporary file another is still writing."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

from pytest_cardprobe import files
from pytest_cardprobe.score import baseline, baseline_update
from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.types import ProbeResult, SampleRecord

RUNS = 4


def _result(case: str, channel: str) -> ProbeResult:
    sample = SampleRecord(0, "content", True, "ok Input.Date", None)
    return ProbeResult(
        f"cases/s.yaml::{case}[m-{channel}-cold]", "s", "m", channel, "cold", case,
        "passed", [sample],
    )  # fmt: skip


def _update(path: str, run: int, slow_read: float) -> None:
    """One run's --cardprobe-update-baseline, with a slow read so that runs overlap."""
    read = baseline.read_file

    def slow(*args: object, **kwargs: object) -> object:
        data = read(*args, **kwargs)  # type: ignore[arg-type]
        time.sleep(slow_read)
        return data

    baseline.read_file = slow  # type: ignore[assignment]
    results = [_result(f"case{run}", f"ch{run}")]
    baseline_update.write_baseline(Path(path), aggregate(results), results, canaries(results))


def test_overlapping_updates_keep_every_runs_arm(tmp_path: Path) -> None:
    path = tmp_path / "cardprobe-baseline.json"
    context = multiprocessing.get_context("fork")
    runs = [context.Process(target=_update, args=(str(path), n, 0.5)) for n in range(RUNS)]
    for run in runs:
        run.start()
    for run in runs:
        run.join(60)
        assert run.exitcode == 0
    arms = json.loads(path.read_text(encoding="utf-8"))["arms"]
    assert sorted(arms) == sorted(f"s/m/ch{n}/cold" for n in range(RUNS))
    assert list(tmp_path.glob(".*.tmp")) == []


def test_a_temporary_file_another_writer_holds_is_not_removed(tmp_path: Path) -> None:
    import fcntl

    target = tmp_path / "report.json"
    busy = tmp_path / ".report.json.abcd1234.tmp"
    fd = os.open(busy, os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    old = time.time() - 3600
    os.utime(busy, (old, old))
    try:
        files.write_atomically(target, "new\n")
        assert busy.exists(), "a write in progress lost its temporary file"
    finally:
        os.close(fd)
    files.write_atomically(target, "newer\n")  # its writer is gone now: removed
    assert not busy.exists()


def test_a_lock_held_too_long_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    with files.exclusive(path):
        context = multiprocessing.get_context("fork")
        queue = context.Queue()

        def wait() -> None:
            try:
                with files.exclusive(path, wait_s=0.3):
                    queue.put("got it")
            except files.Busy as exc:
                queue.put(str(exc))

        child = context.Process(target=wait)
        child.start()
        child.join(30)
        said = queue.get(timeout=5)
    assert "another process has been updating a file in" in said
    assert "--cardprobe-update-baseline" in said


def test_an_update_reads_the_old_baseline_with_the_runs_own_cap(tmp_path: Path) -> None:
    """The update's read under the lock uses the cap of the configure-time read: a file the
    run refused as too large is replaced, as the configure-time note says, never merged."""
    from pytest_cardprobe.score.baseline_update import write_baseline

    path = tmp_path / "b.json"
    shipped = Path(__file__).resolve().parents[2] / "cardprobe-baseline.json"
    path.write_bytes(shipped.read_bytes())
    assert json.loads(path.read_text("utf-8"))["arms"]
    write_baseline(path, [], [], max_bytes=path.stat().st_size)
    assert json.loads(path.read_text("utf-8"))["arms"]  # within the cap: merged
    write_baseline(path, [], [], max_bytes=path.stat().st_size - 1)
    assert not json.loads(path.read_text("utf-8"))["arms"]  # over it: replaced
