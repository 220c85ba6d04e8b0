//! Lossless reading, beyond each object's own traits token (`PyVisitor::traits`): an
//! ObjectProxy's body is a separate anonymous object on the wire, merged into the proxy
//! when read, so the proxy's layout entry also carries the traits token of its body
//! (`(proxy, token, body token)`), and a lossless writer writes the body's traits the
//! way they were written (inline or as a reference to earlier anonymous traits).

use amfkit_core::Result;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::PyVisitor;

impl<'py> PyVisitor<'py> {
    /// In a lossless read: record the traits token of the ObjectProxy `proxy`'s `body`
    /// in the proxy's layout entry. Nothing otherwise, or when either has no entry.
    pub(super) fn layout_proxy_body(
        &mut self,
        proxy: &Bound<'py, PyAny>,
        body: &Bound<'py, PyAny>,
    ) -> Result<()> {
        let Some(layout) = self.layout.clone() else {
            return Ok(());
        };
        let r = (|| -> PyResult<()> {
            let (Some(own), Some(inner)) = (
                layout.get_item(proxy.as_ptr() as usize)?,
                layout.get_item(body.as_ptr() as usize)?,
            ) else {
                return Ok(());
            };
            let own = own.cast_into::<PyTuple>()?;
            let inner = inner.cast_into::<PyTuple>()?;
            let entry = PyTuple::new(
                self.py,
                [own.get_item(0)?, own.get_item(1)?, inner.get_item(1)?],
            )?;
            layout.set_item(proxy.as_ptr() as usize, entry)
        })();
        r.map_err(|e| self.fail(e))
    }
}
