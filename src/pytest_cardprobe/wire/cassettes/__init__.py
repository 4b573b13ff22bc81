"""Cassettes: vcrpy's files, one per test, read, matched, replayed and recorded.

``format`` (what a file holds and how it is written), ``metadata`` (the plugin's own
entries, read and written in one place), ``paths`` (where it lives),
``fingerprint`` (what a recording was made for), ``reading`` (a file checked into data),
``matching`` (which recorded interaction answers a request), then the backends built on
them: ``replay``, ``record`` and ``modes`` (which tests a record mode records).
"""
