"""The call: what one contact's consumer runs from StartListening to the end of its media stream.

:mod:`~voicebridge.call.start` hands the stream to a consumer (StartListeningFunction);
:mod:`~voicebridge.call.consumer` reads it across as many invocations as it takes, hears each track with Ink
(:mod:`voicebridge.ink`), stores the turns and, when the flow converses, has them answered
(:mod:`voicebridge.converse`).
"""
