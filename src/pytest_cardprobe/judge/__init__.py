"""Judge stage: turn one reply into a verdict; decide how it travelled; recover text calls."""
