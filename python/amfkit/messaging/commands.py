"""Flex messaging on the wire: the subscribe, unsubscribe, multi-subscribe, poll and
disconnect commands and the messages Producers send, turned into broker operations and
answered as BlazeDS answers them (docs/messaging.md, "Commands").

Fault codes and texts follow BlazeDS (apache/flex-blazeds, core/src/main/java/flex/
messaging/): `Server.Processing` is MessageException's default code;
`Server.Processing.NotSubscribed` is MessageService.NOT_SUBSCRIBED_CODE (a Consumer's
receive() without a subscription) and FlexClient.throwNotSubscribedException's (a
channel's poll from a client with none); `Client.Authentication` and
`Client.Authorization` are LoginManager.checkConstraint's. The numbers quoted below are
those of common/src/main/resources/flex/messaging/errors.properties.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .._text import shown
from ..remoting.flex import addressed, error_body, operation_of
from ..remoting.http import until_disconnect
from ..remoting.messages import (
    AbstractMessage,
    AcknowledgeMessage,
    AcknowledgeMessageExt,
    AsyncMessage,
    AsyncMessageExt,
    CommandMessage,
    CommandMessageExt,
    ErrorMessage,
    Operation,
    new_id,
)
from ..remoting.packet import Body
from ..remoting.request import ID, Answer, Request
from ..remoting.services import Fault, Principal
from .broker import Batch, Broker, Delivery, DuplicateSubscription, Subscription, SubscriptionLimit
from .destinations import Destination
from .logstore import StoreError
from .selector import SelectorError, compile_selector
from .subtopic import SubtopicError, check_subtopic

if TYPE_CHECKING:
    from .service import Messaging

logger = logging.getLogger("amfkit.messaging")

__all__ = ["MESSAGES_DROPPED", "NOT_SUBSCRIBED", "POSITION", "UNAVAILABLE", "answer", "copy_for", "outgoing"]

#: MessageService.NOT_SUBSCRIBED_CODE.
NOT_SUBSCRIBED = "Server.Processing.NotSubscribed"
#: amfkit's own: pushed to a consumer (as an ErrorMessage, which Flex dispatches as a
#: MessageFaultEvent) when its client's queue bound dropped messages meant for it.
MESSAGES_DROPPED = "Server.Processing.MessagesDropped"
#: amfkit's own: the broker's shared store (Redis) cannot be reached, so nothing was
#: done; the same request may be made again (a subscribe, a send, a Consumer's receive).
UNAVAILABLE = "Server.Processing.Unavailable"
#: amfkit's own header: on a copy pushed from a shared broker, the message's position in
#: its destination's log; on a subscribe, the position of the last message the Consumer
#: received (it resubscribes after losing its channel: delivery goes on after it); on the
#: subscribe's acknowledgement, the position delivery goes on after.
POSITION = "amfkitPosition"
#: DSPollWait (ms) of a channel poll answered empty because the broker's store cannot
#: be reached: the client polls again a little later, and loses nothing meanwhile.
UNAVAILABLE_POLL_WAIT_MS = 1000
#: DSPollWait for a poll that could not be parked because the process holds its
#: max_parked: BlazeDS's BasePollingHTTPEndpoint.DEFAULT_WAIT_FOR_EXCESS_POLL_WAIT_CLIENTS.
EXCESS_POLL_WAIT_MS = 3000
#: DSPollWait after a long-poll when no poll_interval is set: poll again at once (the
#: value BlazeDS's long-polling channels use as client-wait-interval-millis).
IMMEDIATE_POLL_MS = 1
#: Separates subtopic, selector and max frequency in DSAddSub and DSRemSub entries
#: (CommandMessage.SUBTOPIC_SEPARATOR).
ENTRY_SEPARATOR = "_;_"
#: The most entries one multi-subscribe may add or remove, and subtopics one message
#: may be sent to.
MAX_ENTRIES = 256


class _Call:
    """One messaging body being answered: what every handler reads."""

    __slots__ = ("messaging", "request", "message", "headers", "client_id", "principal", "small")

    def __init__(self, messaging: Messaging, request: Request, message: AbstractMessage, client_id: str, principal: Principal | None) -> None:
        self.messaging = messaging
        self.request = request
        self.message = message
        self.headers: dict[str, Any] = message.headers if isinstance(message.headers, dict) else {}
        self.client_id = client_id
        self.principal = principal
        self.small = request.version == 3 and (getattr(message, "small", False) or "DSMessagingVersion" in self.headers)

    def reply(self, reply: AsyncMessage, **headers: Any) -> AsyncMessage:
        """`reply` addressed to the message, with the client's id and `headers`."""
        addressed(reply, self.message, self.client_id)
        reply.headers = {"DSId": self.client_id, **headers}
        return reply

    def ack(self, **headers: Any) -> AsyncMessage:
        return self.reply(AcknowledgeMessageExt() if self.small else AcknowledgeMessage(), **headers)

    def sync(self, body: list[Any] | None, **headers: Any) -> AsyncMessage:
        """A CLIENT_SYNC command: a poll's answer carrying messages (or a no-op)."""
        command = CommandMessageExt() if self.small else CommandMessage()
        command.operation = Operation.CLIENT_SYNC
        command.body = body
        return self.reply(command, **headers)


async def answer(messaging: Messaging, request: Request, body: Body, message: AbstractMessage, client_id: str, principal: Principal | None, target: str) -> Answer:
    """The answer to a messaging command or a sent message: an acknowledgement, a
    CLIENT_SYNC command, or an ErrorMessage."""
    call = _Call(messaging, request, message, client_id, principal)
    try:
        if message.headers is not None and not isinstance(message.headers, dict):
            raise Fault(f"a message's headers are an object, found {shown(message.headers)}", code="Server.Processing")
        if isinstance(message, CommandMessage):
            handler = _HANDLERS.get(operation_of(message))  # type: ignore[arg-type]
            if handler is None:  # MessageService error 10552
                raise Fault(f"unknown CommandMessage operation: {shown(message.operation)}", code="Server.Processing")
            reply = await handler(call)
        else:
            reply = await _send(call)
    except StoreError as e:
        logger.warning("messaging: %s (answered %s)", e, UNAVAILABLE)
        err = error_body(body.response, message, client_id, _unavailable(message), request.settings.debug)
        return Answer(err, body.response, target, message, client_id)
    except Exception as e:
        err = error_body(body.response, message, client_id, e, request.settings.debug)
        return Answer(err, body.response, target, message, client_id)
    return Answer(Body(body.response + "/onResult", "null", reply), body.response, target, message, client_id)


def _unavailable(message: AbstractMessage) -> Fault:
    """The fault of a command or send that found the broker's store unreachable."""
    if isinstance(message, CommandMessage):
        texts = {Operation.SUBSCRIBE: "not subscribed", Operation.MULTI_SUBSCRIBE: "the subscriptions did not change", Operation.UNSUBSCRIBE: "not unsubscribed"}
        op = operation_of(message)
        what = texts.get(-1 if op is None else op, "nothing was done")
    else:
        what = "the message was not published"
    return Fault(f"the message broker cannot be reached now: {what}; try again", code=UNAVAILABLE)


# --- subscriptions ------------------------------------------------------------------


async def _subscribe(call: _Call) -> AsyncMessage:
    messaging, message = call.messaging, call.message
    dest = messaging.destination(message.destination)
    messaging.authorize(dest.may_subscribe(call.principal), call.principal)
    subscription = _subscription(dest, call.headers.get("DSSubtopic"), call.headers.get("DSSelector"))
    consumer_id = _agent_id(message.clientId)
    position = await _add(call, consumer_id, dest, [subscription], _after(call, message.clientId))
    ack = call.ack() if position is None else call.ack(**{POSITION: position})
    ack.clientId = consumer_id  # a new Consumer adopts it
    return ack


def _after(call: _Call, consumer_id: Any) -> int | None:
    """The position a resubscribing Consumer last received (its `POSITION` header),
    which only a Consumer naming its own id may give."""
    value = call.headers.get(POSITION)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # AMF3 sends integers past 2**28 as doubles
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**53:
        raise Fault(f"invalid header {POSITION}: a log position (an integer of 0 or more) was expected, found {shown(value)}", code="Server.Processing")
    if consumer_id is None or consumer_id == "":
        raise Fault(f"header {POSITION} needs the Consumer's own clientId (it resumes a subscription)", code="Server.Processing")
    return value


async def _unsubscribe(call: _Call) -> AsyncMessage:
    message = call.message
    call.messaging.destination(message.destination)
    consumer_id = message.clientId
    if isinstance(consumer_id, str) and consumer_id:
        subtopic, selector = call.headers.get("DSSubtopic"), call.headers.get("DSSelector")
        subscription = Subscription(subtopic if isinstance(subtopic, str) and subtopic else None, selector if isinstance(selector, str) else "")
        # Not subscribed that way (already gone, expired): nothing to undo.
        await call.messaging.broker.remove_subscription(call.client_id, consumer_id, subscription)
    return call.ack()


async def _multi_subscribe(call: _Call) -> AsyncMessage:
    """A MultiTopicConsumer's changes: DSAddSub and DSRemSub entries
    `subtopic_;_selector[_;_maxFrequency]` (an empty part: none), adds first as
    BlazeDS's MessageService.manageSubscriptions does."""
    messaging, message = call.messaging, call.message
    dest = messaging.destination(message.destination)
    adds = [_subscription(dest, s, sel) for s, sel in _entries(call.headers.get("DSAddSub"), "DSAddSub")]
    removes = [Subscription(s, sel) for s, sel in _entries(call.headers.get("DSRemSub"), "DSRemSub")]
    if adds:
        messaging.authorize(dest.may_subscribe(call.principal), call.principal)
    consumer_id = _agent_id(message.clientId)
    position = await _add(call, consumer_id, dest, adds, _after(call, message.clientId))
    for subscription in removes:
        await messaging.broker.remove_subscription(call.client_id, consumer_id, subscription)
    ack = call.ack() if position is None else call.ack(**{POSITION: position})
    ack.clientId = consumer_id
    return ack


async def _add(call: _Call, consumer_id: str, dest: Destination, subscriptions: list[Subscription], after: int | None = None) -> int | None:
    """Add the subscriptions (the first resumes after `after`); the position delivery
    goes on after (None on a broker without positions)."""
    broker = call.messaging.broker
    position = None
    try:
        for subscription in subscriptions:
            position = await broker.add_subscription(call.client_id, consumer_id, dest.name, subscription, after=after)
            after = None
        if subscriptions:
            call.messaging.clients.poke(call.client_id)  # a push channel waiting for it
    except DuplicateSubscription:  # SubscriptionManager, error 10559
        raise Fault(f"duplicate subscription: another client has already subscribed with the clientId {shown(consumer_id)}", code="Server.Processing") from None
    except SubscriptionLimit as e:
        raise Fault(str(e), code="Server.Processing") from None
    return position


def _subscription(dest: Destination, subtopic: Any, selector: Any) -> Subscription:
    """A subscription from a subscribe's headers, checked: a subtopic pattern the
    destination allows (errors 10553, 10554) and a selector that compiles (10550)."""
    if subtopic is None or subtopic == "":
        subtopic = None
    else:
        try:
            subtopic = check_subtopic(subtopic, pattern=True)
        except SubtopicError as e:
            raise Fault(f"the subtopic is not valid: {e}", code="Server.Processing") from None
        if not dest.allow_subtopics:
            raise Fault(f"destination {shown(dest.name)} does not allow subtopics (subscribing to {shown(subtopic)})", code="Server.Processing")
    if selector is None:
        selector = ""
    elif not isinstance(selector, str):
        raise Fault(f"the selector expression is not valid: text was expected, found {shown(selector)}", code="Server.Processing")
    elif selector:
        try:
            compile_selector(selector)
        except SelectorError as e:
            raise Fault(f"the selector expression is not valid: {e}", code="Server.Processing") from None
    return Subscription(subtopic, selector)


def _entries(value: Any, name: str) -> list[tuple[str | None, str]]:
    """(subtopic, selector) of each DSAddSub or DSRemSub entry; a Fault for a malformed
    header (MessageService: "Invalid header ... expected array or list")."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise Fault(f"invalid header {name}: an array was expected, found {shown(value)}", code="Server.Processing")
    if len(value) > MAX_ENTRIES:
        raise Fault(f"invalid header {name}: {len(value)} entries, more than the {MAX_ENTRIES} allowed", code="Server.Processing")
    out: list[tuple[str | None, str]] = []
    for item in value:
        if not isinstance(item, str) or ENTRY_SEPARATOR not in item:
            raise Fault(f"invalid header {name}: entries are 'subtopic_;_selector', found {shown(item)}", code="Server.Processing")
        subtopic, _, rest = item.partition(ENTRY_SEPARATOR)
        selector = rest.partition(ENTRY_SEPARATOR)[0]  # a max frequency may follow: not applied
        out.append((subtopic or None, selector))
    return out


# --- polls --------------------------------------------------------------------------


async def _poll(call: _Call) -> AsyncMessage:
    """A channel's poll (no clientId: every subscription of the client, long-polled) or
    a Consumer's receive() (its clientId and destination: answered at once)."""
    consumer_id = call.message.clientId
    if consumer_id is None or consumer_id == "":
        return await _channel_poll(call)
    return await _consumer_poll(call, consumer_id)


async def _consumer_poll(call: _Call, consumer_id: Any) -> AsyncMessage:
    destination = call.message.destination
    if isinstance(destination, str) and destination:
        call.messaging.destination(destination)
    broker = call.messaging.broker
    owner = await broker.consumer(consumer_id) if isinstance(consumer_id, str) else None
    batch = None
    if owner is not None and owner[0] == call.client_id and (not destination or owner[1] == destination):
        batch = await broker.receive(call.client_id, consumer_id=consumer_id)
    if batch is None:  # MessageService error 10551
        raise Fault(f"not subscribed to destination {shown(destination)}", code=NOT_SUBSCRIBED)
    return await _answer_batch(call, batch, None)


async def _channel_poll(call: _Call) -> AsyncMessage:
    try:
        return await _long_poll(call)
    except StoreError as e:
        # The store away (Redis restarting): nothing moved; the client polls again soon.
        logger.warning("messaging: %s (a poll answered empty, DSPollWait %d ms)", e, UNAVAILABLE_POLL_WAIT_MS)
        return call.ack(DSPollWait=UNAVAILABLE_POLL_WAIT_MS)


async def _long_poll(call: _Call) -> AsyncMessage:
    messaging, client_id = call.messaging, call.client_id
    broker = messaging.broker
    # A poll in a batch with other bodies is never parked (BlazeDS's DSSuppressPollWait),
    # nor one over a channel that pushes.
    request = call.request
    long = messaging.poll_wait > 0 and messaging.parking.max_per_client > 0 and not request.batched and not request.push
    # A long-poll is the client's channel, held here: its answer is written at once, as
    # a stream's frames are (a shared broker writes the cursors behind it; the client's
    # next poll, on its keep-alive connection to this worker, builds on them).
    batch = await broker.receive(client_id, pushing=long)
    if batch is None:  # FlexClient.throwNotSubscribedException, error 10028
        raise Fault("the client has no active subscriptions", code=NOT_SUBSCRIBED)
    hint = _hint(messaging, long)
    if batch or not long:
        return await _answer_batch(call, batch, hint)
    ticket, displaced = messaging.parking.park(client_id)
    if displaced:
        broker.wake(client_id)  # the displaced polls answer their no-op
    if ticket is None:  # the process holds max_parked polls: answer now, poll later
        return call.ack(DSPollWait=EXCESS_POLL_WAIT_MS)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + messaging.poll_wait
    # Under ASGI, the HTTP client going away ends the parked poll at once (its slot is
    # freed; nobody reads the answer).
    gone = None
    if request.receive is not None:
        gone = loop.create_task(until_disconnect(request.receive))
        gone.add_done_callback(functools.partial(_wake_if_gone, broker, client_id))
    try:
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return await _answer_batch(call, Batch([], {}), hint)
            await broker.wait(client_id, remaining)
            if gone is not None and gone.done():
                return call.ack()
            if ticket.displaced:  # a newer poll of this client listens now
                return call.sync(None, DSNoOpPoll=True)
            if messaging.closed:
                return call.ack()
            batch = await broker.receive(client_id, pushing=True)
            if batch is None:  # disconnected or expired meanwhile: an empty answer
                return call.ack()
            if batch:
                return await _answer_batch(call, batch, hint)
    finally:
        if gone is not None:
            gone.cancel()
        messaging.parking.release(ticket)


def _wake_if_gone(broker: Broker, client_id: str, watch: asyncio.Task[None]) -> None:
    if not watch.cancelled():
        broker.wake(client_id)


def _hint(messaging: Messaging, long: bool) -> int | None:
    """The DSPollWait of a channel poll's answer (milliseconds), or None."""
    if messaging.poll_interval is not None:
        return max(1, round(messaging.poll_interval * 1000))
    return IMMEDIATE_POLL_MS if long else None


async def _answer_batch(call: _Call, batch: Batch, hint: int | None) -> AsyncMessage:
    """A CLIENT_SYNC command whose body is the queued messages (each one addressed to
    its consumer), or an empty acknowledgement when there are none."""
    headers = {} if hint is None else {"DSPollWait": hint}
    items = await outgoing(call.messaging.broker, batch, small=call.small)
    if not items:
        return call.ack(**headers)
    return call.sync(items, **headers)


async def outgoing(broker: Broker, batch: Batch, *, small: bool) -> list[AsyncMessage]:
    """The Flex messages a drained batch becomes, in order: first an ErrorMessage
    (`MESSAGES_DROPPED`) for each consumer that lost messages to the queue bound, then
    each delivery's copy (`copy_for`). A channel writes these: a poll answer's body, or
    one streamed frame each."""
    items: list[AsyncMessage] = []
    for consumer_id, n in batch.dropped.items():
        owner = await broker.consumer(consumer_id)
        items.append(_dropped_notice(consumer_id, n, owner[1] if owner else None))
    items += [copy_for(d, small) for d in batch.deliveries]
    return items


def copy_for(delivery: Delivery, small: bool) -> AsyncMessage:
    """A subscriber's copy of a message: the same id, body, headers, timestamp and time
    to live, with the subscriber's clientId (Flex routes a pushed message by it)."""
    m = delivery.message
    cls = AsyncMessageExt if small else AsyncMessage
    copy = cls.__new__(cls)
    copy.body = m.body
    copy.clientId = delivery.consumer_id
    copy.destination = m.destination
    copy.headers = {**m.headers, POSITION: m.position} if m.position else m.headers
    copy.messageId = m.message_id
    copy.timestamp = m.timestamp
    copy.timeToLive = m.time_to_live
    copy.correlationId = m.correlation_id
    return copy


def _dropped_notice(consumer_id: str, dropped: int, destination: str | None) -> ErrorMessage:
    err = ErrorMessage()
    err.clientId = consumer_id
    err.destination = destination
    err.headers = {}
    err.timeToLive = 0
    err.faultCode = MESSAGES_DROPPED
    err.faultString = f"{dropped} message(s) for this consumer were dropped: its client's queue was full"
    err.faultDetail = "the oldest queued messages are dropped first; poll more often or subscribe more narrowly"
    err.rootCause = None
    err.extendedData = {"dropped": dropped}
    return err


# --- sends and the rest -------------------------------------------------------------


async def _send(call: _Call) -> AsyncMessage:
    """A Producer's message: checked (destination, send rules, subtopics), published,
    acknowledged. The server stamps its own time on it; the destination's ttl, if set,
    replaces the sender's."""
    messaging, message = call.messaging, call.message
    dest = messaging.destination(message.destination)
    messaging.authorize(dest.may_send(call.principal), call.principal)
    headers = dict(call.headers)
    subtopics = _sent_subtopics(dest, headers.get("DSSubtopic"))
    producer_id = _agent_id(message.clientId)
    record = messaging.message(
        dest,
        message.body,
        headers,
        subtopics,
        ttl_ms=_ttl(message.timeToLive),
        message_id=message.messageId if isinstance(message.messageId, str) and message.messageId else None,
        correlation_id=_text_or_none(getattr(message, "correlationId", None)),
    )
    messaging.broker.touch(call.client_id)
    await messaging.broker.apublish(record)
    ack = call.ack()
    ack.clientId = producer_id
    return ack


def _sent_subtopics(dest: Destination, value: Any) -> tuple[str, ...]:
    """The subtopics a message is sent to: DSSubtopic is one text, or an array of them
    (a MultiTopicProducer); none may hold a wildcard (MessageService, error 10556)."""
    if value is None or value == "":
        return ()
    items = value if isinstance(value, (list, tuple)) else [value]
    if len(items) > MAX_ENTRIES:
        raise Fault(f"a message sent to {len(items)} subtopics, more than the {MAX_ENTRIES} allowed", code="Server.Processing")
    out: list[str] = []
    for item in items:
        if item is None or item == "":
            continue
        try:
            text = check_subtopic(item, pattern=False)
        except SubtopicError as e:
            raise Fault(f"the subtopic is not valid: {e}", code="Server.Processing") from None
        if text not in out:
            out.append(text)
    if out and not dest.allow_subtopics:  # SubscriptionManager, error 10553
        raise Fault(f"destination {shown(dest.name)} does not allow subtopics (sending to {shown(out[0])})", code="Server.Processing")
    return tuple(out)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _ttl(value: Any) -> int:
    """A sent message's timeToLive in milliseconds; 0 (forever) for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value <= 0:
        return 0
    return int(min(value, 2**53))


def _agent_id(value: Any) -> str:
    """A Consumer's or Producer's clientId: its own, or a new one when it has none
    (the agent adopts the acknowledgement's)."""
    if value is None or value == "":
        return new_id()
    if isinstance(value, str) and ID.fullmatch(value):
        return value
    raise Fault(f"clientId {shown(value)} is not a valid id (letters, digits, '-' and '_', 8 to 64)", code="Server.Processing")


async def _disconnect(call: _Call) -> AsyncMessage:
    """The channel disconnects: the client's subscriptions and queue go, and any poll it
    has parked is answered."""
    await call.messaging.broker.disconnect(call.client_id)
    call.messaging.clients.disconnected(call.client_id)  # an open stream ends
    return call.ack()


_HANDLERS: dict[int, Callable[[_Call], Awaitable[AsyncMessage]]] = {
    Operation.SUBSCRIBE: _subscribe,
    Operation.UNSUBSCRIBE: _unsubscribe,
    Operation.MULTI_SUBSCRIBE: _multi_subscribe,
    Operation.POLL: _poll,
    Operation.DISCONNECT: _disconnect,
}
