"""pytest glue for cardprobe (filled in by the core)."""
