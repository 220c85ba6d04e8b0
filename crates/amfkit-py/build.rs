//! Build script: PyO3's `Py_3_*` cfgs for the interpreter the extension is built for, and
//! `amfkit_dict_layout` when that is CPython 3.11, 3.12 or 3.13 with its release layout
//! (not the stable ABI, not a debug or free-threaded build): the dict walk in
//! `encode/dictwalk.rs` reads those versions' tables in place. Any other interpreter
//! (3.9, 3.10, a version newer than 3.13 whose layout nobody has checked) gets the
//! portable walk through `PyDict_Next`.

use pyo3_build_config::{BuildFlag, GilUsed, PythonAbiKind, PythonImplementation};

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    println!("cargo:rustc-check-cfg=cfg(amfkit_dict_layout)");
    let config = pyo3_build_config::get();
    let abi = config.target_abi();
    let version = abi.version();
    if abi.implementation() == PythonImplementation::CPython
        && version.major == 3
        && (11..=13).contains(&version.minor)
        && matches!(
            abi.kind(),
            PythonAbiKind::VersionSpecific(GilUsed::GilEnabled)
        )
        && !abi.is_debug()
        && !config.build_flags().0.contains(&BuildFlag::Py_DEBUG)
    {
        println!("cargo:rustc-cfg=amfkit_dict_layout");
    }
}
