"""The flow simulator's action handlers, a module per family of Connect's flow language actions.

Each handler takes the call (:class:`~voicebridge_dev.simulator.engine.Call`: its state, clients and clock) and the
action, and returns the branch the action takes; the engine's dispatch table maps each action type to its handler.
Where each family's behaviour comes from is in its module: :mod:`.lambda_`, :mod:`.prompts`,
:mod:`.participants` (input and Lex), :mod:`.flows`, :mod:`.queues`, :mod:`.attributes` and :mod:`.recorded`; what
they share (the branch an action takes, how it fails, the simulator's errors) is in :mod:`.common`.
"""
