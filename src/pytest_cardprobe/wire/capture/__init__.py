"""The capture proxy: an application's chat traffic, relayed to its server and written down.

``format`` is what a capture file holds (written and read; no server library), ``store``
writes the files of one capture folder, ``relay`` is the ASGI application that passes each
request on and tees the chat exchanges, and ``serve`` runs it under uvicorn (the optional
extra ``pytest-cardprobe[capture]``). Only ``relay`` and ``serve`` need that extra.
"""
