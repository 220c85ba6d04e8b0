//! Build script: PyO3's `Py_3_*` cfgs for the interpreter the extension is built for
//! (the dict walk in `encode/dictwalk.rs` reads CPython 3.11's layout on 3.11 only).

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
