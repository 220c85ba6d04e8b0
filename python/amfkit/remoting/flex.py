"""Flex and Royale RemoteObject: a body holding a Flex message, answered with an
AcknowledgeMessage or an ErrorMessage; CommandMessages (ping, login, logout...)
(docs/gateway.md, "Flex bodies")."""

from __future__ import annotations

from typing import Any

from .._text import MAX_SHOWN, clip, shown
from .auth import authenticate, principal_of, split_credentials, stored
from .messages import (
    AbstractMessage,
    AcknowledgeMessage,
    AcknowledgeMessageExt,
    AsyncMessage,
    CommandMessage,
    ErrorMessage,
    Operation,
    RemotingMessage,
)
from .packet import Body
from .request import ID, Answer, Request, fault_of
from .services import Context, Fault
from .sessions import PRINCIPAL_KEY, Session

__all__ = ["MESSAGING_OPERATIONS", "addressed", "answer", "error_body", "message_of", "operation_of"]

#: The CommandMessage operations a gateway with messaging hands to it (without
#: messaging, subscribe and poll are faults and disconnect is acknowledged).
MESSAGING_OPERATIONS = frozenset(
    (Operation.SUBSCRIBE, Operation.UNSUBSCRIBE, Operation.POLL, Operation.MULTI_SUBSCRIBE, Operation.DISCONNECT)
)


def message_of(value: Any) -> AbstractMessage | None:
    """The Flex message a body holds: alone, or in an array of one (Flex sends an AMF0
    strict array holding an AMF3 message, Royale an AMF3 array); None for any other."""
    if isinstance(value, AbstractMessage):
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], AbstractMessage):
        return value[0]
    return None


async def answer(request: Request, body: Body, message: AbstractMessage) -> Answer:
    """The answer to the Flex message `message` of `body`."""
    settings = request.settings
    headers = message.headers if isinstance(message.headers, dict) else {}
    dsid = headers.get("DSId")
    if isinstance(dsid, str) and ID.fullmatch(dsid):
        client_id = dsid
    else:
        client_id = request.new_client_id()
    operation = getattr(message, "operation", None)
    destination = message.destination
    # What the log calls this message: the input's names, each shown bounded.
    if isinstance(message, RemotingMessage):
        target = f"{_name(destination)}.{_name(operation)}"
    elif isinstance(message, CommandMessage):
        target = f"command {_name(operation)}"
    else:
        target = f"message to {_name(destination)}"
    if request.fault is not None:
        fault = error_body(body.response, message, client_id, request.fault, settings.debug)
        return Answer(fault, body.response, target, message, client_id)
    try:
        session = await request.flex_session(client_id)
        principal = request.principal or principal_of(session)
        messaging = settings.messaging
        if messaging is not None and _for_messaging(message):
            return await messaging.answer(request, body, message, client_id, principal, target)
        if isinstance(message, RemotingMessage):
            context = Context(request.protocol, principal, session, headers, client_id, messaging)
            args = message.body
            if args is None:
                args = []
            elif not isinstance(args, list):
                args = [args]
            if not isinstance(destination, str):
                raise Fault(f"no service {shown(destination)}", code="Server.ResourceUnavailable")
            if not isinstance(operation, str):
                raise Fault(f"no method {shown(operation)} on {shown(destination)}", code="Server.ResourceUnavailable")
            result = await settings.services.call(f"{destination}.{operation}", args, context)
        elif isinstance(message, CommandMessage):
            result = await _command(request, message, client_id, session)
        else:
            raise Fault(f"{type(message).__name__} is not handled by this gateway (remoting only)", code="Server.Processing")
    except Exception as e:
        return Answer(error_body(body.response, message, client_id, e, settings.debug), body.response, target, message, client_id)
    small = request.version == 3 and (getattr(message, "small", False) or "DSMessagingVersion" in headers)
    ack = addressed((AcknowledgeMessageExt if small else AcknowledgeMessage)(), message, client_id)
    ack.headers = {"DSId": client_id}
    if settings.messaging is not None and isinstance(message, CommandMessage) and operation_of(message) in (Operation.CLIENT_PING, Operation.LOGIN):
        ack.headers["DSMessagingVersion"] = settings.messaging.version  # Flex then sends small forms
        # Remembered for the channels that push (a stream opens for a greeted client, in
        # the small forms it announced).
        settings.messaging.greet(client_id, getattr(message, "small", False) or _announces(headers.get("DSMessagingVersion")))
    ack.body = result
    return Answer(Body(body.response + "/onResult", "null", ack), body.response, target, message, client_id)


async def _command(request: Request, message: CommandMessage, client_id: str, session: Session) -> Any:
    op = operation_of(message)
    if op in (Operation.CLIENT_PING, Operation.TRIGGER_CONNECT, Operation.DISCONNECT):
        return None
    if op == Operation.LOGIN:
        authenticator = request.settings.authenticator
        if authenticator is None:
            raise Fault("this gateway has no authenticator", code="Client.Authentication")
        try:
            user, password = split_credentials(message.body, message.headers.get("DSCredentialsCharset") if isinstance(message.headers, dict) else None)
        except ValueError as e:
            raise Fault(f"malformed login credentials: {e}", code="Client.Authentication") from None
        principal = await authenticate(authenticator, user, password)
        if principal is None:
            raise Fault("authentication failed", code="Client.Authentication")
        session[PRINCIPAL_KEY] = stored(principal)
        return "success"
    if op == Operation.LOGOUT:
        request.forget_flex_session(client_id)
        return "success"
    raise Fault(f"command operation {shown(message.operation)} is not supported by this gateway", code="Server.Processing")


def error_body(response: str, message: AbstractMessage, client_id: str | None, error: BaseException, debug: bool) -> Body:
    """The ErrorMessage answering `message` with the fault for `error`."""
    fault, trace = fault_of(error, debug)
    details = fault.details
    err = addressed(ErrorMessage(), message, client_id)
    err.headers = {}
    err.timeToLive = 0
    err.body = None
    err.faultCode = fault.code
    err.faultString = fault.message
    err.faultDetail = details if isinstance(details, str) else (trace or "")
    err.rootCause = None
    err.extendedData = details if details is not None and not isinstance(details, str) else None
    return Body(response + "/onStatus", "null", err)


def _for_messaging(message: AbstractMessage) -> bool:
    """Whether a gateway with messaging hands `message` to it: a subscribe, unsubscribe,
    poll, multi-subscribe or disconnect command, or a message a Producer sends."""
    if isinstance(message, CommandMessage):
        return operation_of(message) in MESSAGING_OPERATIONS
    return isinstance(message, AsyncMessage) and not isinstance(message, AcknowledgeMessage)


def _announces(version: Any) -> bool:
    """Whether a ping's DSMessagingVersion announces small forms (1 or more)."""
    return not isinstance(version, bool) and isinstance(version, (int, float)) and version >= 1


def operation_of(message: CommandMessage) -> int | None:
    """A command's operation as an int; None when it is not a whole number (only numbers
    are compared: a list, or a class with its own __eq__, is no operation)."""
    op = message.operation
    if isinstance(op, bool) or not isinstance(op, (int, float)):
        return None
    if isinstance(op, float):
        if not op.is_integer():
            return None
        op = int(op)
    return op


def addressed(reply: Any, message: AbstractMessage, client_id: str | None) -> Any:
    """`reply` addressed to `message`: its correlationId, clientId and destination. Only
    text is echoed: an id or destination of any other type (a value the encoder may not
    write back, or one holding the whole request) is left out."""
    reply.correlationId = message.messageId if isinstance(message.messageId, str) else None
    reply.clientId = message.clientId if isinstance(message.clientId, str) and message.clientId else client_id
    reply.destination = message.destination if isinstance(message.destination, str) else None
    return reply


def _name(value: Any) -> str:
    """A destination or operation in the log: a short text as it is, else bounded."""
    return clip(value, MAX_SHOWN) if isinstance(value, str) else shown(value)
