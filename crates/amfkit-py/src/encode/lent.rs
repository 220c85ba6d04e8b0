//! Containers walked on a borrowed reference, and the safepoints where they become owned.
//!
//! The hot walk (dicts, lists and tuples, instances of plain registered classes) takes no
//! reference of its own: a reference count write to every container of a large graph
//! dirties a cache line per container, and the graph's owner keeps it alive anyway while
//! no Python code runs. Each container being walked is pushed on the `lent` stack
//! (with, for a member, its name). Before anything that may run Python code (a hook,
//! a property, `classify`'s isinstance checks, an allocation the garbage collector may
//! follow with finalizers) the walk calls [`PyEncoder::safepoint`], which takes a
//! reference to everything on the stack not yet owned: a hook that empties a dict being
//! walked cannot free it, nor the member in hand.
//!
//! The reference tables key objects by address, so an object keyed must live as long as
//! the table: `keep_keyed` notes it, and the first safepoint keeps (takes a reference
//! to) every one noted so far; after that, each is kept as it is keyed. An encode that
//! runs no Python code takes no reference to a container or a keyed object (only to the
//! strs shared across the graph that the string table remembers by identity).
//!
//! The owned entries are always the bottom of the stack (a safepoint owns everything
//! above the mark), so when [`PyEncoder::give_back`] drops one (which may free it and run
//! Python code), everything below it is owned too.

use pyo3::ffi;
use pyo3::prelude::*;

use super::PyEncoder;

impl PyEncoder<'_> {
    /// Push `p`, a live object the caller reads without a reference of its own (an item
    /// or a member of a container on the stack, or a container's own dict); returns the
    /// mark to give back.
    #[inline(always)]
    pub(super) fn lend(&mut self, p: *mut ffi::PyObject) -> usize {
        let mark = self.lent.len();
        self.lent.push(p);
        mark
    }

    /// Pop the stack down to `mark`, dropping the references the safepoints took.
    #[inline(always)]
    pub(super) fn give_back(&mut self, mark: usize) {
        if self.lent_owned > mark {
            self.release(mark);
        }
        self.lent.truncate(mark);
    }

    #[cold]
    #[inline(never)]
    fn release(&mut self, mark: usize) {
        while self.lent_owned > mark {
            self.lent_owned -= 1;
            let p = self.lent[self.lent_owned];
            self.lent.truncate(self.lent_owned);
            // SAFETY: `p` was given a reference by `safepoint` (it is below `lent_owned`),
            // and this drops it. Everything still on the stack is owned (the owned
            // entries are a prefix), so Python code run by a finalizer here cannot free
            // what the walk still reads.
            unsafe { ffi::Py_DECREF(p) };
        }
    }

    /// Own everything on the stack, and keep every object noted by `keep_keyed`: call
    /// before anything that may run Python code.
    #[inline(always)]
    pub(crate) fn safepoint(&mut self) {
        if self.lent_owned < self.lent.len() || !self.python_ran {
            self.own_lent();
        }
    }

    #[cold]
    #[inline(never)]
    fn own_lent(&mut self) {
        for &p in &self.lent[self.lent_owned..] {
            // SAFETY: every entry not yet owned is alive: it was lent by a container on
            // the stack (or is one), and no Python code has run since it was pushed
            // (every such place calls this first). The GIL is held.
            unsafe { ffi::Py_INCREF(p) };
        }
        self.lent_owned = self.lent.len();
        if !self.python_ran {
            self.python_ran = true;
            for p in std::mem::take(&mut self.unkept) {
                // SAFETY: no Python code has run in this encode before this first
                // safepoint, so every object noted is still held where the graph holds
                // it; the new reference is owned by `keep`.
                self.keep
                    .push(unsafe { Bound::from_borrowed_ptr(self.py, p) });
            }
        }
    }
}
