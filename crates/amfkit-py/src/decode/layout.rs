//! Lossless reading, beyond each object's own traits (`PyVisitor::traits`): an
//! ObjectProxy's body is a separate anonymous object on the wire, merged into the proxy
//! when read, so the proxy's layout entry also carries the traits of its body, and a
//! lossless writer writes the body's traits the way they were written (inline or as a
//! reference to earlier anonymous traits).

use pyo3::prelude::*;

use super::PyVisitor;

impl<'py> PyVisitor<'py> {
    /// In a lossless read: record the traits of the ObjectProxy `proxy`'s `body` in the
    /// proxy's layout entry. Nothing otherwise, or when either has no entry.
    pub(super) fn layout_proxy_body(
        &mut self,
        proxy: &Bound<'py, PyAny>,
        body: &Bound<'py, PyAny>,
    ) {
        if let Some(layout) = &mut self.layout {
            layout.record_body(proxy, body);
        }
    }
}
