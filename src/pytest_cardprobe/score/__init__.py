"""Score stage: fold results into arms, compare them with the baseline, render reports."""
