"""pytest's side of the sources suites read (``python:``, ``mcp:``): once per run, said up front.

Each process has one :class:`~pytest_cardprobe.source.reader.SourceReader` (in the session
state), which the suite loader asks. Sources are read at session start, before pytest prints
its header: by the one process of a run without xdist, or by the xdist controller, which hands
the outcomes to its workers (``workerinput``) so that no worker starts a source again. The
header then says, per suite, whether its sources were read, checked, changed or used
unchecked from the snapshot; a suite whose source changed has every test fail as stale.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cardprobe.files import MB, FileRefused, read_capped
from pytest_cardprobe.glue.hints import carried_options
from pytest_cardprobe.glue.recording import file_identity
from pytest_cardprobe.glue.roles import is_worker
from pytest_cardprobe.source.reader import SourcePolicy, SourceReader

if TYPE_CHECKING:
    from pytest_cardprobe.run.settings import Settings

#: The key of the controller's outcomes in an xdist worker's ``workerinput``.
WORKER_KEY = "cardprobe_sources"
# A suite that names a source has a `python:` or `mcp:` key somewhere; others are not loaded
# early (loading is cheap, but most suites have no source).
_MENTIONS = re.compile(rb"""(?:^|[\s{,])["']?(?:python|mcp)["']?[ \t]*:""", re.MULTILINE)


def make_reader(config: pytest.Config, settings: Settings) -> SourceReader:
    """The reader of this process: a worker takes its controller's outcomes and writes no
    snapshot; so does a run that only collects."""
    workerinput = getattr(config, "workerinput", None)
    root = Path(str(config.rootpath))
    carried = carried_options(config.invocation_params.args)
    models = [a for m in settings.models for a in ("--model", m)]

    def rerecord(path: Path) -> str:
        shown = file_identity(path, root)
        words = ["pytest", "--live", *models, *carried, shown]
        return " ".join(shlex.quote(w) for w in words)

    policy = SourcePolicy(
        cassette_dir=settings.cassette_dir,
        root=root,
        check=settings.source_check,
        recording=settings.live,
        write=workerinput is None and not config.option.collectonly,
        timeout=settings.source_timeout,
        max_bytes=int(settings.max_file_mb * MB),
        suite_file=lambda path: file_identity(path, root),
        rerecord=rerecord,
    )
    reader = SourceReader(policy)
    if workerinput is not None:
        reader.load(workerinput.get(WORKER_KEY))
    return reader


def read_early(
    config: pytest.Config, paths: Iterable[Path], load: Callable[[Path], object], cap: int
) -> None:
    """Resolve the sources of the suites at ``paths`` by loading each one that names a
    source (``load`` raises :class:`SuiteError` for a bad suite, which collection reports)."""
    from pytest_cardprobe.suite.loader import SuiteError

    if is_worker(config) or config.option.help or config.option.version:
        return
    for path in paths:
        try:
            if not _MENTIONS.search(read_capped(path, cap)):
                continue
        except (FileRefused, OSError):
            continue  # collection reports it
        with contextlib.suppress(SuiteError):
            load(path)


def header(reader: SourceReader) -> list[str]:
    """The header lines about sources (none when no suite names one)."""
    lines = reader.header_lines()
    return ["cardprobe sources:", *(f"  {line}" for line in lines)] if lines else []


def hand_to_worker(reader: SourceReader, node: Any) -> None:
    """An xdist controller gives each worker the outcomes it resolved."""
    node.workerinput[WORKER_KEY] = reader.export()


def write_snapshots(session: pytest.Session, reader: SourceReader, exitstatus: int) -> None:
    """At the end of a recording run that got to ask (no usage error, not only collecting),
    write the snapshots of the sources it read."""
    config = session.config
    if exitstatus == pytest.ExitCode.USAGE_ERROR or config.option.collectonly:
        return
    reader.flush()
