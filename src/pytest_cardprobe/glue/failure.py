"""A probe test's failure report as pytest shows it: one headline, one line per sample,
and the start of each reply (whole replies with ``-vv``). Model text is escaped."""

from __future__ import annotations

from pytest_cardprobe.text import escape_control
from pytest_cardprobe.types import REPLY_PREVIEW, ProbeResult, with_class


def headline(result: ProbeResult) -> str:
    """One line for pytest's short test summary: what went wrong first."""
    if result.message:
        # An infra sample's label already says "infra: …": the status is not said twice.
        return escape_control(with_class(result.message, result.status))
    failed = [s for s in result.samples if not s.passed]
    if not failed:
        return result.status
    first = failed[0]
    total = len(result.samples)
    rule = (
        f" (at least {result.at_least} of {total} must pass)"
        if result.at_least is not None and result.at_least < total
        else ""
    )
    return escape_control(
        f"{len(failed)} of {total} samples failed{rule}; "
        f"sample {first.index + 1}: [{first.route or '-'}] {first.label}"
    )


def describe(result: ProbeResult, full: bool = False) -> str:
    """The failure report: one line per sample, then the start of its reply.

    ``full`` shows whole replies (``-vv``); otherwise the first REPLY_PREVIEW
    characters on one line. Model text is escaped either way.
    """
    lines = [headline(result)]
    total = len(result.samples)
    for s in result.samples:
        mark = "pass" if s.passed else "FAIL"
        why = with_class(s.label, s.failure)
        lines.append(
            escape_control(f"  sample {s.index + 1}/{total} {mark} [{s.route or '-'}] {why}")
            + (f" (finish: {escape_control(s.finish_reason)})" if s.finish_reason else "")
        )
        if s.retry_of:
            lines.append(
                f"    retried through the tool after: [{s.retry_of.get('route') or '-'}] "
                f"{s.retry_of.get('label', '')}"
            )
        if s.unknown_types:
            unknown = escape_control(", ".join(s.unknown_types))
            lines.append(f"    unknown element types: {unknown}")
        if s.thinking:
            # Reasoning is model text too: escaped, and cut like the reply unless -vv.
            if full:
                thought = escape_control(s.thinking, keep_newlines=True)
            else:
                thought = escape_control(s.thinking[:REPLY_PREVIEW])
                extra = len(s.thinking) - REPLY_PREVIEW
                thought += f"… [{extra} more characters]" if extra > 0 else ""
            body = thought.replace("\n", "\n    ~ ")
            lines.append(f"    reasoning (not judged):\n    ~ {body}")
        if not s.reply:
            continue
        if full:
            body = escape_control(s.reply, keep_newlines=True).replace("\n", "\n    | ")
            lines.append(f"    | {body}")
        else:
            shown = escape_control(s.reply[:REPLY_PREVIEW])
            more = len(s.reply) - REPLY_PREVIEW
            lines.append(f"    | {shown}" + (f"… [{more} more characters]" if more > 0 else ""))
    return "\n".join(lines)
