"""Drafting a call suite from an application's recorded traffic (``python -m pytest_cardprobe
draft``).

``sources`` reads what was recorded — capture folders (``wire/capture``), Ollama's own
request logs (``OLLAMA_DEBUG_LOG_REQUESTS=1``) and OpenAI-shaped JSONL — into :class:`Seen`
exchanges; ``messages`` puts each API's messages into the suite's neutral form; ``plan``
groups them by tool set and question and drafts each case's expectation from what the model
did; ``write`` writes the suite, its tools files and its prompt, checked by the suite loader
before anything is written. A part of its own (docs/design.md §4): it reads the wire's
formats and parsers and writes the suite stage's format, so it imports both, and only
``cli`` imports it.
"""
