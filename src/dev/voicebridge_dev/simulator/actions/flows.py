"""The flows and modules family of the flow simulator: ``TransferToFlow``, ``InvokeFlowModule`` and
``EndFlowModuleExecution``, across a folder of flows (:mod:`~voicebridge_dev.simulator.library`).

``TransferToFlow`` goes on in the flow it names, which keeps the contact's attributes but not the flow's own (without
a folder it ends the run as transferred); ``InvokeFlowModule`` runs the module, which has flow attributes of its own,
and comes back by its ``NextAction`` or the condition the module's ``Result`` equals; a flow not in the folder takes
the error branch (:mod:`voicebridge_dev.simulator.standins`; the action pages of Connect's flow language reference,
https://docs.aws.amazon.com/connect/latest/APIReference/flow-control-actions-transfertoflow.html,
https://docs.aws.amazon.com/connect/latest/APIReference/flow-language-actions-invoke-flow-module.html and
https://docs.aws.amazon.com/connect/latest/APIReference/endflowmoduleexecution.html).
"""

from __future__ import annotations

from voicebridge_dev.flows import Action, InvalidFlowError
from voicebridge_dev.flows.errors import FlowError
from voicebridge_dev.simulator.actions.recorded import unavailable
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.events import Noted
from voicebridge_dev.simulator.library import display_names
from voicebridge_dev.simulator.loaded import LoadedFlow
from voicebridge_dev.simulator.outcomes import ActionFailed, Branch, CallOver

__all__ = ["end_module", "invoke_module", "return_from_module", "transfer_to_flow"]


def transfer_to_flow(call: Call, action: Action) -> Branch:
    reference = call.contact.value(str(action.parameters["ContactFlowId"]))
    if call.library is None:
        raise CallOver("transferred", f"flow {reference}")
    name, flow = _find_flow(call, action, reference)
    # The contact goes on in the other flow: its attributes stay, the flow's own attributes do not.
    call.callers.clear()
    call.contact.flow_attributes = {}
    call.loops = {}
    return _enter(call, action, name, flow, "transferred to")


def invoke_module(call: Call, action: Action) -> Branch:
    reference = call.contact.value(str(action.parameters["FlowModuleId"]))
    if call.library is None:
        return unavailable(call, action)
    name, module = _find_flow(call, action, reference)
    call.callers.append((call.flow, call.flow_name, action, call.contact.flow_attributes, call.loops))
    call.contact.flow_attributes, call.loops = {}, {}
    return _enter(call, action, name, module, "invoked module")


def end_module(call: Call, action: Action) -> Branch:
    if not call.callers:
        raise CallOver("ended", action.type)
    result = call.contact.value(str(action.parameters.get("Result", "")))
    invoke = return_from_module(call)
    target = invoke.condition_target(result)
    if target is None:
        return Branch("returned", invoke.next_action)
    return Branch(f"returned {result}", target)


def return_from_module(call: Call) -> Action:
    """Back in the flow that invoked the running module; the Invoke module action it returns to."""
    flow, name, invoke, attributes, loops = call.callers.pop()
    call.flow, call.flow_name = flow, name
    call.contact.flow_attributes, call.loops = attributes, loops
    return invoke


def _find_flow(call: Call, action: Action, reference: str) -> tuple[str, LoadedFlow]:
    """The flow ``reference`` names in the library, with its name (exported, else its file's)."""
    assert call.library is not None
    try:
        found = call.library.find(reference, names=display_names(call.flow, action.identifier))
    except (InvalidFlowError, FlowError, OSError) as exc:
        raise ActionFailed(f"the flow {reference!r} names cannot run: {exc}") from exc
    if found is None:
        raise ActionFailed(f"no flow {reference!r} in the flows folder")
    path, loaded = found
    return str(loaded.flow.metadata.get("name") or path.stem), loaded


def _enter(call: Call, action: Action, name: str, flow: LoadedFlow, how: str) -> Branch:
    call.flow, call.flow_name = flow.flow, name
    call.family = flow.family or call.family
    call.functions = {**call.functions, **flow.functions}
    call.log.record(Noted(call.clock.now(), action.identifier, action.type, {how: name}))
    return Branch(f"{how} {name}", flow.flow.start_action)
