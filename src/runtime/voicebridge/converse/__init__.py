"""The agent on the line: a caller's finished turn answered by a responder, sentence by sentence.

On each turn end the call's consumer asks the configured responder (:mod:`voicebridge.converse.responders`) for the
reply, cuts its streamed text into sentences as they arrive (:mod:`voicebridge.converse.sentences`), synthesizes
each with the Speak path's synthesizer and stores it as segment *k* of turn *n* (:mod:`voicebridge.store.replies`)
the moment its audio is in S3. ConverseFunction hands the flow the next segment to play.
"""
