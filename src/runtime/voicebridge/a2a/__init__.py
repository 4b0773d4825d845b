"""The streaming transport: voicebridge as an Amazon Connect external AI agent (A2A voice streaming).

Connect opens one WebSocket per voice contact, streams the caller's audio in and plays the audio streamed back.
The agent runs the same conversation as the flows path's consumer — Ink's session and turns, speculation, the
responders, Sonic, redaction, the call record, the metrics — and speaks each Sonic chunk into the call as it
arrives:

- :mod:`~voicebridge.a2a.protocol`: the contract's frames, sans I/O;
- :mod:`~voicebridge.a2a.output`: the agent's voice paced into Connect's buffer, paused and interrupted;
- :mod:`~voicebridge.a2a.session`: one contact's conversation over the socket;
- :mod:`~voicebridge.a2a.server`: the WebSocket server (the bearer key, health, draining); ``python -m
  voicebridge.a2a`` runs it.
"""
