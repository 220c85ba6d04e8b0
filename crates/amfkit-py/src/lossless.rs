//! What a lossless read records for the writer: the [`Layout`], an opaque object to
//! Python (`SOL._layout`), handed back to `encode_sol` and `encode_values`.
//!
//! For each AMF3 object read with traits (anonymous, typed, a Flex collection), by its
//! address: the object itself (held, so that the address stays its own while the layout
//! lives) and the traits it was read with, one [`TraitsRecord`] per traits definition,
//! shared by the objects that referenced it; for an ObjectProxy, the traits of its body
//! too (`decode/layout.rs`). And the size of what was read, which the writer reserves at
//! once: a lossless rewrite is about as long as its input. Kept in Rust, 16 bytes an
//! object in a vector sorted by address (a dict of tuples took about 150 bytes and three
//! allocations an object).

use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

/// A traits definition as it was read.
pub struct TraitsRecord {
    pub alias: Py<PyString>,
    pub alias_text: String,
    /// The sealed member names, as a tuple (a TypedObject's `sealed` is compared with
    /// it) and as text.
    pub sealed: Py<PyTuple>,
    pub names: Vec<String>,
    pub dynamic: bool,
}

impl TraitsRecord {
    /// The writer's traits-table key for this definition: the record's address, unique
    /// while the layout lives (the records are boxed) and never a type's address nor
    /// one of the small synthetic keys (`encode/mod.rs`).
    pub fn key(&self) -> usize {
        self as *const TraitsRecord as usize
    }
}

/// An object's entry: the object, its traits and, for an ObjectProxy, its body's
/// (`NO_BODY` otherwise). 16 bytes.
pub struct Entry {
    pub obj: Py<PyAny>,
    pub traits: u32,
    body: u32,
}

const NO_BODY: u32 = u32::MAX;

impl Entry {
    /// The traits of an ObjectProxy's body, when it was read as one.
    pub fn body(&self) -> Option<u32> {
        (self.body != NO_BODY).then_some(self.body)
    }
}

/// The record itself, built by the decoder (`PyVisitor::layout`), then
/// [`LayoutData::finish`]ed: its entries sorted by address, for a binary search.
#[derive(Default)]
pub struct LayoutData {
    entries: Vec<Entry>,
    /// ObjectProxies and their bodies, by address, matched when finished.
    bodies: Vec<(usize, usize)>,
    /// Boxed: a record's address is its traits key, and must not move as more come.
    #[allow(clippy::vec_box)]
    traits: Vec<Box<TraitsRecord>>,
    /// The size in bytes of the input read, and how many strings its AMF3 string table
    /// held (the writer sizes its output and its tables with them).
    pub input_len: usize,
    pub strings: usize,
}

impl LayoutData {
    /// An empty record of a read of `input_len` bytes.
    pub fn new(input_len: usize) -> Self {
        LayoutData {
            input_len,
            ..LayoutData::default()
        }
    }

    /// Add a traits definition; its index for [`LayoutData::record`].
    pub fn add_traits(&mut self, record: TraitsRecord) -> u32 {
        self.traits.push(Box::new(record));
        (self.traits.len() - 1) as u32
    }

    /// Record `obj`, read with traits `traits`.
    pub fn record(&mut self, obj: &Bound<'_, PyAny>, traits: u32) {
        self.entries.push(Entry {
            obj: obj.clone().unbind(),
            traits,
            body: NO_BODY,
        });
    }

    /// Note that `body` (itself recorded) was the body of the ObjectProxy `proxy`:
    /// [`LayoutData::finish`] gives the proxy's entry the body's traits.
    pub fn record_body(&mut self, proxy: &Bound<'_, PyAny>, body: &Bound<'_, PyAny>) {
        self.bodies
            .push((proxy.as_ptr() as usize, body.as_ptr() as usize));
    }

    /// Sort the entries by address (each object is held, so no two share one) and match
    /// the ObjectProxies with their bodies' traits: the record is ready for the writer.
    pub fn finish(&mut self) {
        self.entries
            .sort_unstable_by_key(|e| e.obj.as_ptr() as usize);
        for (proxy, body) in std::mem::take(&mut self.bodies) {
            let Some(traits) = self.find(body).map(|i| self.entries[i].traits) else {
                continue;
            };
            if let Some(i) = self.find(proxy) {
                self.entries[i].body = traits;
            }
        }
    }

    fn find(&self, address: usize) -> Option<usize> {
        self.entries
            .binary_search_by_key(&address, |e| e.obj.as_ptr() as usize)
            .ok()
    }

    /// The entry of `obj`, if it was read losslessly (a finished record).
    #[inline]
    pub fn entry(&self, obj: &Bound<'_, PyAny>) -> Option<&Entry> {
        self.find(obj.as_ptr() as usize).map(|i| &self.entries[i])
    }

    /// How many objects were recorded.
    pub fn objects(&self) -> usize {
        self.entries.len()
    }

    pub fn traits(&self, index: u32) -> &TraitsRecord {
        &self.traits[index as usize]
    }
}

/// The encoding choices of a lossless read (`amfkit.sol.loads(..., lossless=True)`,
/// `amfkit.nested`), for the writer that writes its values back.
#[pyclass(module = "amfkit._amfkit", name = "Layout")]
pub struct Layout {
    pub data: LayoutData,
}

#[pymethods]
impl Layout {
    /// The objects recorded.
    fn __len__(&self) -> usize {
        self.data.entries.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "<Layout: {} objects, traits definitions: {}, read from {} bytes>",
            self.data.entries.len(),
            self.data.traits.len(),
            self.data.input_len
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for e in &self.data.entries {
            visit.call(&e.obj)?;
        }
        for t in &self.data.traits {
            visit.call(&t.alias)?;
            visit.call(&t.sealed)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.data.entries.clear();
        self.data.traits.clear();
    }
}
