//! amfkit's Python extension module `amfkit._amfkit`: exports only.

use pyo3::prelude::*;

mod buffer;
mod decode;
mod encode;
mod errors;
mod lenient;
mod lossless;
mod nested;
mod options;
mod output;
mod packet;
mod registry;
mod shm;
mod shm_message;
mod shm_pingpong;
mod shm_record;
mod shm_subscriber;
mod sol;
mod types;
mod wire;

#[pymodule]
fn _amfkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The decoders' default limits, for the Python wrappers' signatures.
    let limits = amfkit_core::Limits::DEFAULT;
    m.add("DEFAULT_MAX_DEPTH", limits.max_depth)?;
    m.add("DEFAULT_MAX_OBJECTS", limits.max_objects)?;
    m.add("DEFAULT_MAX_SIZE", limits.max_size)?;
    // How the encoder walks dicts in this build (the tests check it per interpreter).
    m.add("DICT_WALK", encode::DICT_WALK)?;
    m.add("AMFError", errors::amf_error(py))?;
    m.add("DecodeError", errors::decode_error(py))?;
    m.add("EncodeError", errors::encode_error(py))?;
    m.add("StoreError", errors::store_error(py))?;
    m.add_function(wrap_pyfunction!(types::_setup, m)?)?;
    m.add_function(wrap_pyfunction!(registry::_register_class, m)?)?;
    m.add_function(wrap_pyfunction!(registry::_unregister_class, m)?)?;
    m.add_function(wrap_pyfunction!(registry::_registered_classes, m)?)?;
    m.add_function(wrap_pyfunction!(decode::api::amf0_decode, m)?)?;
    m.add_function(wrap_pyfunction!(decode::api::amf3_decode, m)?)?;
    m.add_function(wrap_pyfunction!(encode::api::amf0_encode, m)?)?;
    m.add_function(wrap_pyfunction!(encode::api::amf3_encode, m)?)?;
    m.add_function(wrap_pyfunction!(packet::decode_packet, m)?)?;
    m.add_function(wrap_pyfunction!(packet::encode_packet, m)?)?;
    m.add_function(wrap_pyfunction!(packet::decode_packet_layout, m)?)?;
    m.add_function(wrap_pyfunction!(sol::decode_sol, m)?)?;
    m.add_function(wrap_pyfunction!(sol::encode_sol, m)?)?;
    m.add_function(wrap_pyfunction!(nested::decode_values, m)?)?;
    m.add_function(wrap_pyfunction!(nested::encode_values, m)?)?;
    m.add_function(wrap_pyfunction!(wire::wire_read, m)?)?;
    m.add_function(wrap_pyfunction!(wire::wire_write, m)?)?;
    m.add_class::<decode::api::Amf0Decoder>()?;
    m.add_class::<decode::api::Amf3Decoder>()?;
    m.add_class::<encode::api::Amf0Encoder>()?;
    m.add_class::<encode::api::Amf3Encoder>()?;
    m.add_class::<decode::external::DataInput>()?;
    m.add_class::<encode::external::DataOutput>()?;
    m.add_class::<shm::ShmSegment>()?;
    m.add_class::<lossless::Layout>()?;
    m.add_class::<output::Encoded>()?;
    m.add_class::<shm_subscriber::ShmSubscriber>()?;
    m.add_function(wrap_pyfunction!(shm_record::shm_publish, m)?)?;
    m.add_function(wrap_pyfunction!(shm_pingpong::shm_ping, m)?)?;
    m.add_function(wrap_pyfunction!(shm_pingpong::shm_echo, m)?)?;
    Ok(())
}
