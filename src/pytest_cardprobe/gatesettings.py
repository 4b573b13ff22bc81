"""How strict the gate is: the settings record of the scoring stage's gate, below every
stage, so the run's settings (``run/settings.py``) hold it without the asking stage
importing the scoring stage. A leaf: it imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The letter alpha, as the reports write the significance level.
ALPHA = "\N{GREEK SMALL LETTER ALPHA}"
#: Gate modes: the fixed noise floor (the default), or a paired significance test.
FLOOR, SIGNIFICANCE = "floor", "significance"
GATE_MODES: tuple[str, ...] = (FLOOR, SIGNIFICANCE)


@dataclass
class GateSettings:
    """How strict the gate is (every default of the gate is written here, once)."""

    noise_floor: int = 1
    strict_baseline: bool = False
    max_unscored: float = 0.2
    mode: str = FLOOR  # FLOOR or SIGNIFICANCE (--cardprobe-gate, ini cardprobe_gate)
    alpha: float = 0.05  # significance level (--cardprobe-alpha, ini cardprobe_alpha)
    # What a regression the change accepted does to the run (ini
    # cardprobe_accepted_regressions): ``pass`` (exit 0, listed first) or ``fail``.
    accepted: str = "pass"

    def describe(self, mode: str | None = None) -> str:
        """``floor ±1`` or ``significance, alpha = 0.05`` (alpha the Greek letter) for ``mode``,
        else for the mode in force."""
        mode = mode or self.mode
        if mode == SIGNIFICANCE:
            return f"significance, {ALPHA} = {self.alpha:g}"
        return f"floor ±{self.noise_floor}"

    @property
    def other_mode(self) -> str:
        """The mode not in force."""
        return FLOOR if self.mode == SIGNIFICANCE else SIGNIFICANCE
