"""The responders a deployment can choose (``RESPONDER``): ``bedrock``, ``lex``, ``lambda`` or ``scripted``.

Each implements :class:`~voicebridge.converse.responder.Responder`; :func:`voicebridge.container.responder` builds the
configured one once per container.
"""
