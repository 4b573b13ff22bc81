"""Source stage: what a suite takes from the application, read where the application keeps it.

A suite's ``tools:`` or ``prompts:`` may name an object in the application's code or an MCP
server (``suite/sources.py`` parses that). Reading one starts processes: a subprocess that
imports the application's module under a time bound, an MCP server over stdio or a client of
one over streamable HTTP. This stage does that, keeps the result in a snapshot beside the
suite's cassettes so replay never needs the application, and compares the two (docs/design.md
§4, "The source stage").
"""

#: ``--cardprobe-source-check``: read sources when they can be read, always, or never.
CHECK_MODES: tuple[str, ...] = ("auto", "always", "never")
