"""The two long polls the flow makes after every prompt, side by side: the caller's next turn (AwaitTurnFunction,
:mod:`~voicebridge.polls.next_turn`) and the next segment of the agent's reply (ConverseFunction,
:mod:`~voicebridge.polls.next_segment`), each answering within its wait (:mod:`~voicebridge.polls.longpoll`).
"""
