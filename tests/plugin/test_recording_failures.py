"""A recording that cannot be written (a full disk, a file-size limit, a read-only folder) is
one clear error naming the cassette, and the cassette that was there stays as it was."""

from __future__ import annotations

import json
import textwrap

import pytest
from replyserver import reply_server

CASSETTE = "cassettes/cards/m/date-prose-cold.yaml"
OLD = '{"an": "old recording"}\n'

# Run inside the pytest under test (a subprocess): each makes the cassette's write fail the
# way the system would. The file-size limit is real (the kernel answers EFBIG); a full disk
# and a read-only folder are the errors os.fsync and os.open return there.
CONFTESTS = {
    "file-size-limit": """
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))
    """,
    "disk-full": """
        import errno, os
        _fsync = os.fsync
        def fsync(fd):
            if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return _fsync(fd)
        os.fsync = fsync
    """,
    "read-only-folder": """
        import errno, os
        _open = os.open
        def refusing(path, flags, *args, **kwargs):
            if str(path).endswith(".tmp") and "cassettes" in str(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return _open(path, flags, *args, **kwargs)
        os.open = refusing
    """,
}
SAID = {
    "file-size-limit": "File too large (EFBIG)",
    "disk-full": "No space left on device (ENOSPC)",
    "read-only-folder": "Read-only file system (EROFS)",
}


@pytest.mark.parametrize("how", list(CONFTESTS))
def test_a_cassette_that_cannot_be_written_is_an_error_naming_it_and_the_old_one_stays(
    project: pytest.Pytester, how: str
) -> None:
    old = project.path / CASSETTE
    old.parent.mkdir(parents=True)
    old.write_text(OLD, encoding="utf-8")
    project.makeconftest(textwrap.dedent(CONFTESTS[how]))
    with reply_server() as server:
        # Larger than the file-size limit, well under the cassette cap.
        server.content = json.dumps([{"type": "TextBlock", "text": "x" * 300_000}])
        result = project.runpytest_subprocess(
            "-p", "no:cacheprovider", "cases", "--live", "--model", "m",
            "--cardprobe-server", server.url, "--cardprobe-channel", "prose",
            "--cardprobe-condition", "cold", "--cardprobe-samples", "1",
            "--cardprobe-no-warmup", "-k", "date", timeout=120,
        )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert server.chats == 1
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert f"cannot write the cassette {CASSETTE}: {SAID[how]}" in out, out
    assert "the cassette is as it was" in out and "re-record: pytest --live" in out, out
    assert "internal error" not in out and "Traceback" not in out, out
    assert old.read_text(encoding="utf-8") == OLD
    assert [p.name for p in old.parent.iterdir()] == [old.name]  # no temporary file left
