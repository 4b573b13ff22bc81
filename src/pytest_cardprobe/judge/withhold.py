"""What a careful streaming client may show before a turn ends.

A small model may write a tool call as text. Shown token by token, that call would reach the
user as raw JSON before anyone knew it was a call. So content that opens like a call or a
card (``{``, ``[``, a code fence, a call wrapper) is withheld until the turn ends, and is
released as prose only if recovery does not claim it. Other content is released as it comes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

# Openings that may start a text-written call or a JSON card.
WITHHELD_OPENINGS = ("{", "[", "```", "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>")


class ContentGate:
    """Feed streamed content pieces; collect what may be shown early and what was held back."""

    def __init__(self, declared: Collection[str]) -> None:
        self.declared = list(declared)
        self.released: list[str] = []
        self._pending: list[str] = []
        self._decision: bool | None = None  # True: withhold the turn; False: release freely

    def feed(self, piece: str) -> str:
        """Take one piece; return the text that may be shown now."""
        if not piece:
            return ""
        if self._decision is False:
            self.released.append(piece)
            return piece
        self._pending.append(piece)
        if self._decision is None:
            self._decision = self._decide("".join(self._pending).lstrip())
            if self._decision is False:
                text = "".join(self._pending)
                self._pending.clear()
                self.released.append(text)
                return text
        return ""

    @staticmethod
    def _decide(head: str) -> bool | None:
        if not head:
            return None
        for opening in WITHHELD_OPENINGS:
            if head.startswith(opening):
                return True
            if opening.startswith(head):
                return None  # could still become this opening: wait for more
        return False

    def finish(self) -> str:
        """At the end of the turn: release held-back text unless recovery claims a call."""
        from pytest_cardprobe.judge.recovery import recover_tool_calls

        held = "".join(self._pending)
        self._pending.clear()
        if not held:
            return ""
        recovery = recover_tool_calls(held, self.declared)
        if recovery.calls or recovery.error:
            return ""  # a call (or a refused attempt at one): never shown as prose
        self.released.append(held)
        return held

    @property
    def shown(self) -> str:
        """Everything released so far."""
        return "".join(self.released)


def exposure(pieces: Sequence[str], declared: Collection[str]) -> dict[str, int]:
    """What two streaming clients would have shown of one streamed turn's content.

    A careful client passes the pieces through a :class:`ContentGate`; ``shown_early`` is what
    it released before the turn ended. A naive one shows every piece as it comes. When
    recovery then claims the turn's content as a call (or refuses an attempt at one), the
    call was written as text: ``naive_leak`` is the characters the naive client had shown
    (all of it), ``careful_leak`` those the careful one had (prose before the call opened
    lets the gate release it). Both are 0 for a turn that holds no call.
    """
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    gate = ContentGate(declared)
    early = sum(len(gate.feed(piece)) for piece in pieces)
    content = "".join(pieces)
    claimed = False
    if declared and content:
        recovery = recover_tool_calls(content, declared)
        claimed = recovery.found or recovery.refused
    return {
        "pieces": len(pieces),
        "shown_early": early,
        "naive_leak": len(content) if claimed else 0,
        "careful_leak": early if claimed else 0,
    }
