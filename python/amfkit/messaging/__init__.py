"""Flex messaging: Producers and Consumers (publish-subscribe) on the gateway's URL,
through a broker (docs/messaging.md).

    from amfkit.remoting import Gateway
    from amfkit.messaging import Messaging
    gateway = Gateway(services, messaging=Messaging(["prices", "chat"]))
    # in a service: context.publish("prices", {"symbol": "ABC", "bid": 1.5}, subtopic="fx.eur")

`Broker` is the seam between the Flex commands and where subscriptions and queues live
(`Broker.open("memory://")`, this process); a channel waits on it and drains it.

The client side: `Client.consumer(...)` and `Client.producer(...)` (amfkit.remoting)
give a `Consumer` (`AsyncConsumer`) and a `Producer` (`AsyncProducer`), which receive
`Received` messages (docs/client.md, "Messaging").
"""

from __future__ import annotations

from .broker import Batch, Broker, Delivery, DuplicateSubscription, Message, Subscription, SubscriptionLimit
from .consumer import AsyncConsumer, AsyncProducer, ConnectionLost, Consumer, MessagingFault, Producer, Received
from .destinations import Destination
from .memory import MemoryBroker
from .parking import Parking, Ticket
from .selector import SelectorError, compile_selector
from .service import DEFAULT_POLL_WAIT, Messaging
from .subtopic import SubtopicError, check_subtopic, subtopic_matches

__all__ = [
    "AsyncConsumer",
    "AsyncProducer",
    "Batch",
    "Broker",
    "ConnectionLost",
    "Consumer",
    "DEFAULT_POLL_WAIT",
    "Delivery",
    "Destination",
    "DuplicateSubscription",
    "MemoryBroker",
    "Message",
    "Messaging",
    "MessagingFault",
    "Parking",
    "Producer",
    "Received",
    "SelectorError",
    "Subscription",
    "SubscriptionLimit",
    "SubtopicError",
    "Ticket",
    "check_subtopic",
    "compile_selector",
    "subtopic_matches",
]
