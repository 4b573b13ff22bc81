"""Wire stage: talk to model servers, record and replay their raw replies.

Shared pieces at the bottom (``errors``, ``redact``, ``jsonread``, ``body``, ``shapes``,
``calls``), one module per API and way of travelling (``ollama``, ``ollama_stream``,
``openai``, ``openai_stream``), the ``client`` on top of them, and ``cassettes/`` for the
recordings (docs/design.md §4).
"""
