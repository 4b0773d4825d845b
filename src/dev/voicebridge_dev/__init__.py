"""The developer side of voicebridge: the ``voicebridge`` command line, the local cloud (moto and the emulators),
the Amazon Connect flow simulator and demo, flow validation and rendering, ``mkv dump`` and the template reader.

It depends on the runtime package :mod:`voicebridge`; the runtime never imports it, and no function's artifact
contains it.
"""
