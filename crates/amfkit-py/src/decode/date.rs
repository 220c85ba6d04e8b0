//! Dates: a `datetime` (naive, or UTC with `tz_aware`), or an `amfkit.Date` when the
//! time is out of datetime's range, NaN, or carries AMF0's time-zone field.

use std::os::raw::c_int;

use amfkit_core::date as dates;
use amfkit_core::Result;
use pyo3::ffi;
use pyo3::prelude::*;

use super::PyVisitor;

impl<'py> PyVisitor<'py> {
    /// The datetime (or `amfkit.Date` when out of range, NaN, or AMF0 tz is set).
    pub(super) fn make_date(&mut self, millis: f64, tz: i16) -> Result<Bound<'py, PyAny>> {
        if tz == 0 {
            if let Some((y, mo, d, h, mi, s, us)) = dates::fields(millis) {
                let tzinfo = if self.tz_aware {
                    self.t.utc
                } else {
                    // SAFETY: None is a static singleton, and the GIL is held.
                    unsafe { ffi::Py_None() }
                };
                // SAFETY: the datetime C API was loaded by `_setup` (the GIL is held); the
                // fields come from `dates::fields`, within datetime's ranges, and `tzinfo`
                // is timezone.utc (held by `Types`) or None. The new reference is owned at
                // once by `own`.
                let ptr = unsafe {
                    let api = ffi::PyDateTimeAPI();
                    ((*api).DateTime_FromDateAndTime)(
                        y,
                        mo as c_int,
                        d as c_int,
                        h as c_int,
                        mi as c_int,
                        s as c_int,
                        us as c_int,
                        tzinfo,
                        (*api).DateTimeType,
                    )
                };
                return self.own(ptr);
            }
        }
        // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by `own`,
        // which checks it for null.
        let m = unsafe { ffi::PyFloat_FromDouble(millis) };
        let m = self.own(m)?;
        // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by `own`,
        // which checks it for null.
        let z = unsafe { ffi::PyLong_FromLong(tz as _) };
        let z = self.own(z)?;
        self.call_type(self.t.date, &[m.as_ptr(), z.as_ptr()])
    }
}
