//! AMF3: markers, and the reader and writer methods of [`Decoder`](crate::Decoder) and
//! [`Encoder`](crate::Encoder) for this version.

pub mod read;
pub mod write;

/// AMF3 type markers (AMF3 specification, section 3.1).
pub mod marker {
    pub const UNDEFINED: u8 = 0x00;
    pub const NULL: u8 = 0x01;
    pub const FALSE: u8 = 0x02;
    pub const TRUE: u8 = 0x03;
    pub const INTEGER: u8 = 0x04;
    pub const DOUBLE: u8 = 0x05;
    pub const STRING: u8 = 0x06;
    pub const XML_DOCUMENT: u8 = 0x07;
    pub const DATE: u8 = 0x08;
    pub const ARRAY: u8 = 0x09;
    pub const OBJECT: u8 = 0x0A;
    pub const XML: u8 = 0x0B;
    pub const BYTE_ARRAY: u8 = 0x0C;
    pub const VECTOR_INT: u8 = 0x0D;
    pub const VECTOR_UINT: u8 = 0x0E;
    pub const VECTOR_DOUBLE: u8 = 0x0F;
    pub const VECTOR_OBJECT: u8 = 0x10;
    pub const DICTIONARY: u8 = 0x11;
}

/// Smallest and largest values of AMF3's 29-bit signed integer.
pub const INT_MIN: i64 = -(1 << 28);
pub const INT_MAX: i64 = (1 << 28) - 1;
/// Largest length, count or reference index a U29 header can carry.
pub const MAX_LEN: usize = (1 << 28) - 1;
