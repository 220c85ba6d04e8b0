//! Flex's externalizable classes whose body format is public: the collection wrappers,
//! whose body is one AMF3 value (an Array for the collections, an anonymous object for
//! the proxy), and the small forms of messages (`DSK`, `DSA`, `DSC`), whose body is flag
//! bytes and the values they announce, one run per class level.

use crate::decoder::Decoder;
use crate::error::{Error, Result};
use crate::visit::Visitor;

/// `mx.collections.ArrayCollection` on the wire: its body is an Array.
pub const ARRAY_COLLECTION: &str = "flex.messaging.io.ArrayCollection";
/// `mx.collections.ArrayList` on the wire: its body is an Array.
pub const ARRAY_LIST: &str = "flex.messaging.io.ArrayList";
/// `mx.utils.ObjectProxy` on the wire: its body is an object.
pub const OBJECT_PROXY: &str = "flex.messaging.io.ObjectProxy";

/// Every alias above: the externalizable classes whose body is one AMF3 value.
pub const ONE_VALUE_EXTERNALS: &[&str] = &[ARRAY_COLLECTION, OBJECT_PROXY, ARRAY_LIST];

/// The small form of `AcknowledgeMessage`.
pub const ACKNOWLEDGE_SMALL: &str = "DSK";
/// The small form of `AsyncMessage`.
pub const ASYNC_SMALL: &str = "DSA";
/// The small form of `CommandMessage`.
pub const COMMAND_SMALL: &str = "DSC";

/// Most flag bytes one class level of a small form may have (writers write one or two;
/// each announces at most seven values).
pub const MAX_FLAG_BYTES: usize = 16;

/// The class levels of a small form, outermost class first: each writes its flag bytes
/// (bit 0x80: another flag byte follows), then one AMF3 value for each of bits 0 to 6
/// that is set, in order. None for a class that is not a small form.
///
/// `AbstractMessage` writes body, clientId, destination, headers, messageId, timestamp
/// and timeToLive (first byte), then clientId and messageId as 16 bytes (second byte);
/// `AsyncMessage` correlationId, and correlationId as 16 bytes; `CommandMessage`
/// operation; `AcknowledgeMessage` nothing yet. A reader reads and drops the values of
/// bits it does not know.
pub fn small_form_levels(class_name: &str) -> Option<&'static [&'static str]> {
    match class_name {
        ACKNOWLEDGE_SMALL => Some(&["AbstractMessage", "AsyncMessage", "AcknowledgeMessage"]),
        ASYNC_SMALL => Some(&["AbstractMessage", "AsyncMessage"]),
        COMMAND_SMALL => Some(&["AbstractMessage", "AsyncMessage", "CommandMessage"]),
        _ => None,
    }
}

/// The name of the member that bit `bit` of flag byte `byte` announces at the class
/// level `level` (a name from [`small_form_levels`]); None for a bit no Flex version
/// defines.
pub fn small_form_field(level: &str, byte: usize, bit: u32) -> Option<&'static str> {
    const ABSTRACT: [&str; 7] = [
        "body",
        "clientId",
        "destination",
        "headers",
        "messageId",
        "timestamp",
        "timeToLive",
    ];
    match (level, byte, bit) {
        ("AbstractMessage", 0, b) => ABSTRACT.get(b as usize).copied(),
        ("AbstractMessage", 1, 0) => Some("clientIdBytes"),
        ("AbstractMessage", 1, 1) => Some("messageIdBytes"),
        ("AsyncMessage", 0, 0) => Some("correlationId"),
        ("AsyncMessage", 0, 1) => Some("correlationIdBytes"),
        ("CommandMessage", 0, 0) => Some("operation"),
        _ => None,
    }
}

/// How many values the flag bytes `flags` announce (bits 0 to 6 of each).
pub fn flagged_values(flags: &[u8]) -> usize {
    flags.iter().map(|f| (f & 0x7f).count_ones() as usize).sum()
}

impl<'de, V: Visitor<'de>> Decoder<'de, V> {
    /// The flag bytes of one class level of a small-form message: bytes up to the first
    /// one without bit 0x80, at most [`MAX_FLAG_BYTES`].
    pub fn read_small_flags(&mut self) -> Result<Vec<u8>> {
        let mut flags = Vec::with_capacity(2);
        loop {
            let f = self.bytes().u8()?;
            flags.push(f);
            if f & 0x80 == 0 {
                return Ok(flags);
            }
            if flags.len() >= MAX_FLAG_BYTES {
                return Err(Error::custom(
                    format!(
                        "a small-form message level with more than {MAX_FLAG_BYTES} flag bytes"
                    ),
                    self.position(),
                ));
            }
        }
    }
}
