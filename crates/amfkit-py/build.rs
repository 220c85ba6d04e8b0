//! Build script: PyO3's `Py_3_*` cfgs for the interpreter the extension is built for, and
//! `amfkit_cpython_311` when that is CPython 3.11 with its release layout (not the stable
//! ABI, not a debug or free-threaded build): the dict walk in `encode/dictwalk.rs` reads
//! that version's tables in place.

use pyo3_build_config::{BuildFlag, GilUsed, PythonAbiKind, PythonImplementation};

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    println!("cargo:rustc-check-cfg=cfg(amfkit_cpython_311)");
    let config = pyo3_build_config::get();
    let abi = config.target_abi();
    let version = abi.version();
    if abi.implementation() == PythonImplementation::CPython
        && (version.major, version.minor) == (3, 11)
        && matches!(
            abi.kind(),
            PythonAbiKind::VersionSpecific(GilUsed::GilEnabled)
        )
        && !abi.is_debug()
        && !config.build_flags().0.contains(&BuildFlag::Py_DEBUG)
    {
        println!("cargo:rustc-cfg=amfkit_cpython_311");
    }
}
