"""``python -m pytest_cardprobe draft SOURCE... --out cases/NAME.yaml``: a call suite drafted
from an application's recorded traffic.

SOURCE is a capture folder (``capture``), a folder of Ollama's request logs
(``OLLAMA_DEBUG_LOG_REQUESTS=1``), a ``.jsonl`` file of ``{"input": request, "output":
reply}`` lines, or one file of any of these. The suite keeps the application's tool
declarations (one tools file per distinct set; several sets make several suites), its system
prompt and each question with the turns before it; every expectation is a draft of what the
model did, marked ``reviewed: false`` (``draft/plan.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_cardprobe.cli import add_redact_field, invoked_as, megabytes_arg

#: The largest file (or JSONL line) read, in MB.
DEFAULT_MAX_FILE_MB = 64


def _out(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() not in (".yaml", ".yml") or not path.stem.strip():
        raise argparse.ArgumentTypeError(f"wants a suite file ending in .yaml, got {text!r}")
    return path


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog=f"{invoked_as()} draft",
        description=(
            "Draft a call suite from recorded traffic: capture folders, Ollama request logs "
            "(OLLAMA_DEBUG_LOG_REQUESTS=1) or OpenAI-shaped JSONL. Every expectation is what the "
            "model did, marked `reviewed: false` until a person checks it."
        ),
    )
    parse.add_argument("sources", nargs="+", type=Path, metavar="SOURCE")
    parse.add_argument(
        "--out", required=True, type=_out, metavar="cases/NAME.yaml", help="the suite to write"
    )
    parse.add_argument(
        "--force", action="store_true", help="replace the suite, tools and prompt files if present"
    )
    add_redact_field(parse, "blank")
    parse.add_argument(
        "--max-file-mb", type=megabytes_arg, default=DEFAULT_MAX_FILE_MB * 1024 * 1024,
        metavar="MB", help=f"largest file or JSONL line read (default {DEFAULT_MAX_FILE_MB})",
    )  # fmt: skip
    return parse


def main(argv: Sequence[str]) -> int:
    """Draft and write; exit 0 when a suite was written, 1 when none could be, 2 on usage."""
    from pytest_cardprobe.draft.plan import plan_suites
    from pytest_cardprobe.draft.sources import Reader, SourceProblem
    from pytest_cardprobe.draft.write import write_suites
    from pytest_cardprobe.text import escape_control

    args = parser().parse_args(list(argv))
    from pytest_cardprobe.cli.project import redact_keys

    redact = redact_keys(args.redact_field)
    if redact is None:
        return 2
    reader = Reader(redact, args.max_file_mb)
    try:
        for source in args.sources:
            reader.source(source)
    except SourceProblem as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    read = reader.read
    plan = plan_suites(read.seen)
    lines = [f"draft: {len(read.seen)} chat exchange(s) read"]
    if read.skipped:
        lines.append(f"{len(read.skipped)} file(s) or line(s) not read whole:")
        lines += [f"  {why}" for why in read.skipped[:20]]
        if len(read.skipped) > 20:
            lines.append(f"  … and {len(read.skipped) - 20} more")
    if read.not_chat:
        lines.append(f"{read.not_chat} Ollama log file(s) of other routes (not chat) left out")
    if plan.no_tools:
        lines.append(
            f"{len(plan.no_tools)} exchange(s) declare no tools, and a call suite judges calls to "
            f"declared tools: left out (first: {plan.no_tools[0]})"
        )
    lines += [f"left out {why}" for why in plan.unusable[:20]]
    lines += [f"note: {note}" for note in dict.fromkeys(plan.notes)][:20]
    if not plan.suites:
        if not read.seen:
            why = "no chat exchange could be read from " + ", ".join(map(str, args.sources))
        elif len(plan.no_tools) == len(read.seen):
            why = (
                "no exchange declares tools, and a call suite judges calls to declared tools; "
                "record traffic of an application that sends `tools` with its chat requests"
            )
        else:
            why = "no exchange that declares tools holds a question a case could ask"
        lines.append(f"error: nothing to draft: {why}")
        print(escape_control("\n".join(lines), keep_newlines=True), file=sys.stderr)
        return 1
    written = write_suites(plan.suites, args.out, args.force)
    for (path, problem), draft in zip(written, plan.suites, strict=True):
        if problem:
            lines.append(f"error: {problem}")
            continue
        kinds = _kinds(draft)
        lines.append(
            f"wrote {path}: {len(draft.cases)} case(s) ({kinds}) from {draft.exchanges} "
            f"exchange(s), all marked reviewed: false; {len(draft.tools)} tool(s)"
        )
        lines.append("  record it: " + _record_command(path, draft))
    if not any(problem is None for _, problem in written):
        print(escape_control("\n".join(lines), keep_newlines=True), file=sys.stderr)
        return 1
    lines.append(
        "next: check each case's expect (it is what the model did, not what it should do), then "
        "set reviewed: true; the prompts are your users' real ones — edit before committing"
    )
    print(escape_control("\n".join(lines), keep_newlines=True))
    return 0


def _kinds(draft: object) -> str:
    from pytest_cardprobe.draft.plan import DraftSuite

    assert isinstance(draft, DraftSuite)
    counts = {"call": 0, "no call": 0, "tool loop": 0, "none yet": 0}
    for case in draft.cases:
        expect = case.expect or {}
        if not expect:
            counts["none yet"] += 1
        elif "no_call" in expect:
            counts["no call"] += 1
        elif "sequence" in expect:
            counts["tool loop"] += 1
        else:
            counts["call"] += 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)


def _record_command(path: Path, draft: object) -> str:
    from pytest_cardprobe.draft.plan import DraftSuite

    assert isinstance(draft, DraftSuite)
    from pytest_cardprobe.text import shell_quoted

    # The path and the model names come from the command line and from recorded traffic
    # (untrusted): each is one quoted shell word, so the printed command runs what it shows.
    words = ["pytest", shell_quoted(str(path)), "--live"]
    for model, _ in draft.models.most_common():
        if model != "?":
            words += ["--model", shell_quoted(model)]
    if draft.apis.most_common(1)[0][0] == "openai":
        words.append("--cardprobe-api openai")
    if draft.upstreams:
        # Where the traffic went (a capture in front of llama-server on its own port, say):
        # the record command asks the same server, not the default Ollama.
        words += ["--cardprobe-server", shell_quoted(draft.upstreams.most_common(1)[0][0])]
    if draft.streamed * 2 > draft.exchanges:
        words.append("--cardprobe-stream")
    return " ".join(words)
