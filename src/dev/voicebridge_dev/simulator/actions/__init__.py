"""The flow simulator's action handlers, a module per family of Connect's flow language actions.

Each handler takes the call (:class:`~voicebridge_dev.simulator.call.Call`: its state, clients and clock) and the
action, and returns the branch the action takes; the engine's dispatch table maps each action type to its handler.
Where each family's behaviour comes from is in its module: :mod:`.lambda_`, :mod:`.prompts`,
:mod:`.participants` (input and Lex), :mod:`.flows`, :mod:`.queues`, :mod:`.attributes` and :mod:`.recorded`; what
they share (the branch an action takes, how it fails, the simulator's errors) is in
:mod:`~voicebridge_dev.simulator.outcomes`. The handlers import the call and never the engine, so the simulator's
modules depend one way: outcomes and the call's parts, then the call, then the actions, then the engine.
"""
