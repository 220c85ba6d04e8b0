"""`pyamf.flex.messaging`: Flex's messages, which are amfkit's own
(`amfkit.remoting.messages`; registered under Flex's aliases and the small `DSK`, `DSA`,
`DSC` forms)."""

from __future__ import annotations

from amfkit.remoting.messages import (
    AbstractMessage,
    AcknowledgeMessage,
    AsyncMessage,
    CommandMessage,
    ErrorMessage,
    RemotingMessage,
)

__all__ = [
    "AbstractMessage",
    "AcknowledgeMessage",
    "AsyncMessage",
    "CommandMessage",
    "ErrorMessage",
    "RemotingMessage",
]
