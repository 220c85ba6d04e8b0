//! The class aliases of Flex's collection wrappers: externalizable classes whose body is
//! one AMF3 value (an Array for the collections, an anonymous object for the proxy).

/// `mx.collections.ArrayCollection` on the wire: its body is an Array.
pub const ARRAY_COLLECTION: &str = "flex.messaging.io.ArrayCollection";
/// `mx.collections.ArrayList` on the wire: its body is an Array.
pub const ARRAY_LIST: &str = "flex.messaging.io.ArrayList";
/// `mx.utils.ObjectProxy` on the wire: its body is an object.
pub const OBJECT_PROXY: &str = "flex.messaging.io.ObjectProxy";

/// Every alias above: the externalizable classes whose body is one AMF3 value.
pub const ONE_VALUE_EXTERNALS: &[&str] = &[ARRAY_COLLECTION, OBJECT_PROXY, ARRAY_LIST];
