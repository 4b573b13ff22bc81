"""Kill a pytest run with SIGKILL while it writes a file (issue 14: old or new, never partial).

The project gets a conftest that, when ``CARDPROBE_WRITE_MARK`` is set, makes ``os.fsync``
(called by ``files.write_atomically`` after the temporary file is written and before the
rename) leave a mark and block; the test waits for the mark and kills the process there,
so the kill lands in the middle of the write every time instead of by luck.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BLOCKING_CONFTEST = """
import os
import time
from pathlib import Path

_real_fsync = os.fsync


def _blocking_fsync(fd):
    # The temporary file is written, the rename has not happened: say so, then wait to be
    # killed right there.
    Path(os.environ["CARDPROBE_WRITE_MARK"]).write_text(str(os.getpid()))
    time.sleep(120)
    _real_fsync(fd)


if os.environ.get("CARDPROBE_WRITE_MARK"):
    os.fsync = _blocking_fsync
"""


def kill_during_write(cwd: Path, *args: str) -> None:
    """Run pytest in ``cwd`` until it is writing a file (fsync blocks), then SIGKILL it."""
    mark = cwd / "writing.mark"
    env = {**os.environ, "CARDPROBE_WRITE_MARK": str(mark), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 300
        while not mark.exists():
            assert proc.poll() is None, "pytest ended before it wrote anything"
            assert time.monotonic() < deadline, "pytest never started writing"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        mark.unlink(missing_ok=True)
