//! The Python edge (`hlodump._core`): argument conversion, GIL release, errors → Python
//! exceptions, tables → pyarrow through the Arrow PyCapsule interface. No parsing here.

use std::path::PathBuf;

use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_schema::DataType;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PyTable;

use crate::error::Error;
use crate::read::{Input, MapPolicy, Options};
use crate::runtime;
use crate::tables::{Tables, TABLE_NAMES};

/// Raise `hlodump.exceptions.<name>(*args)`: one exception hierarchy, defined in Python, shared
/// with the reference parser.
fn py_exception<'py>(py: Python<'py>, name: &str, args: Bound<'py, pyo3::types::PyTuple>) -> PyErr {
    match py.import("hlodump.exceptions").and_then(|m| m.getattr(name)).and_then(|cls| cls.call1(args)) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

fn to_pyerr(py: Python<'_>, e: Error) -> PyErr {
    match e {
        // pyo3 maps io::ErrorKind to FileNotFoundError, PermissionError, … itself.
        Error::Io { path, source } => {
            if source.raw_os_error().is_none() {
                // no errno ("not a regular file", "changed while it was read"): an OSError
                // whose text says it (with `filename` set, Python prints "[Errno None] None: path")
                return pyo3::exceptions::PyOSError::new_err(format!("{path}: {source}"));
            }
            let err = PyErr::from(std::io::Error::new(source.kind(), source.to_string()));
            let _ = err.value(py).setattr("filename", path);
            err
        }
        Error::Parse(p) => py_exception(
            py,
            "ParseError",
            pyo3::types::PyTuple::new(py, [
                p.path.into_pyobject(py).unwrap().into_any(),
                p.line.into_pyobject(py).unwrap().into_any(),
                p.column.into_pyobject(py).unwrap().into_any(),
                p.message.into_pyobject(py).unwrap().into_any(),
                p.text.into_pyobject(py).unwrap().into_any(),
            ])
            .unwrap(),
        ),
    }
}

/// How often the calling thread, waiting for a read, looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(10);
/// After Ctrl-C, how long to let the workers stop (and release their files) before returning
/// anyway; a worker stuck in the kernel (a hung network file system) is left behind.
const STOP_GRACE: Duration = Duration::from_millis(10);

/// Parse `inputs` (`PyInput`: `hlodump.io.plan.Input` records) into a dict of pyarrow tables.
/// `dumps` (one per input, for tuple inputs, which carry no dump; `files.dump`) defaults to
/// each input's shown path. Everything after `inputs` is a keyword argument. `buffers` (one per
/// input, or None): an input's bytes already in memory, as a pyarrow `uint8` array (anything with
/// `__arrow_c_array__`; `pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(obj)])` wraps
/// any buffer-protocol object without a copy). Its views point into that memory, kept alive by
/// the Arrow release callback; `path` is not opened.
///
/// The read runs on a thread of its own with a pool of its own (`runtime`); this thread waits
/// without the GIL and every `SIGNAL_POLL` runs Python's signal handlers: Ctrl-C stops the
/// workers (`Abort::cancel`) and raises `KeyboardInterrupt` here at once.
#[pyfunction(name = "read")]
#[pyo3(signature = (inputs, *, tables=None, on_error="raise", threads=0, mmap=None, progress=None, dumps=None, columns=None, buffers=None, strict=false))]
#[allow(clippy::too_many_arguments)]
fn read_inputs<'py>(
    py: Python<'py>,
    inputs: Vec<PyInput>,
    tables: Option<Vec<String>>,
    on_error: &str,
    threads: i64,
    mmap: Option<bool>,
    progress: Option<Py<PyAny>>,
    dumps: Option<Vec<String>>,
    columns: Option<std::collections::HashMap<String, Vec<String>>>,
    buffers: Option<Vec<Option<pyo3_arrow::PyArray>>>,
    strict: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut opts = base_options(on_error, threads, mmap, strict)?;
    let inputs = make_inputs(inputs, dumps, buffers)?;
    let columns = match &columns {
        Some(c) => Some(projection_masks(c)?),
        None => None,
    };
    // files, errors and notes always come back
    opts = opts.for_tables(tables.as_deref(), columns, &["files", "errors", "notes"]);
    let masks = opts.projection.clone();
    let abort = runtime::Abort::new();
    let stop = abort.clone();
    let report = move |files: u64, bytes: u64| {
        if let Some(cb) = &progress {
            if stop.stopped().is_none() {
                Python::attach(|py| {
                    let _ = cb.call1(py, (files, bytes));
                });
            }
        }
    };
    // A panic anywhere (also on a worker thread: rayon re-raises it) comes back as the
    // thread's result instead of tearing down the interpreter.
    let rx = std::sync::Mutex::new(runtime::spawn(abort.clone(), move || crate::read::read(&inputs, &opts, &report))?);
    let recv = |wait: Duration| rx.lock().unwrap_or_else(|e| e.into_inner()).recv_timeout(wait);
    let result = loop {
        match py.detach(|| recv(SIGNAL_POLL)) {
            Ok(r) => break r,
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    abort.cancel();
                    let _ = py.detach(|| recv(STOP_GRACE));
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(internal(py, "the reading thread ended without a result".into()));
            }
        }
    };
    let batches = match result {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Err(to_pyerr(py, e)),
        Err(payload) => {
            return Err(match runtime::stop_of(&*payload, Some(&abort)) {
                Some(stop) => stop_to_pyerr(stop),
                None => internal(py, runtime::panic_text(&*payload)),
            });
        }
    };
    let out = PyDict::new(py);
    for (name, batches) in batches {
        if let Some(wanted) = &tables {
            if !wanted.iter().any(|w| w == name) && name != "files" && name != "errors" && name != "notes" {
                continue;
            }
        }
        let idx = TABLE_NAMES.iter().position(|n| *n == name).expect("known table");
        let mask = masks.as_ref().and_then(|m| m[idx]);
        let schema = Tables::schema_projected(name, mask).expect("known table");
        // chunks of a split file were parsed unprojected: select by name (zero-copy)
        let batches = batches.into_iter().map(|b| select(b, &schema)).collect::<PyResult<Vec<_>>>()?;
        let table = PyTable::try_new(batches, schema)?;
        out.set_item(name, table.into_pyarrow(py)?)?;
    }
    Ok(out)
}

/// The bytes of an in-memory input: the values buffer of a `uint8` array without nulls (shared
/// with its owner through the C data interface, not copied).
fn in_memory(shown: &str, array: pyo3_arrow::PyArray) -> PyResult<crate::source::Source> {
    use arrow_array::cast::AsArray;
    let (array, _) = array.into_inner();
    if array.data_type() != &DataType::UInt8 || array.null_count() > 0 {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{shown}: an in-memory input must be a uint8 array without nulls (got {})",
            array.data_type()
        )));
    }
    let values = array.as_primitive::<arrow_array::types::UInt8Type>().values().inner().clone();
    Ok(crate::source::Source::from_buffer(values))
}

/// `columns` ({table: [column, …]}) as one bit mask per table, in `TABLE_NAMES` order.
fn projection_masks(columns: &std::collections::HashMap<String, Vec<String>>) -> PyResult<Vec<Option<u64>>> {
    let mut masks = vec![None; TABLE_NAMES.len()];
    for (table, cols) in columns {
        let idx = TABLE_NAMES
            .iter()
            .position(|n| n == table)
            .ok_or_else(|| PyValueError::new_err(format!("unknown table {table:?}")))?;
        masks[idx] = Some(column_mask(table, cols)?);
    }
    Ok(masks)
}

fn column_mask(table: &str, cols: &[String]) -> PyResult<u64> {
    let names = Tables::columns_of(table).expect("known table");
    let mut mask = 0u64;
    for c in cols {
        let i = names.iter().position(|n| n == c).ok_or_else(|| {
            PyValueError::new_err(format!("table {table:?} has no column {c:?} (columns: {})", names.join(", ")))
        })?;
        mask |= 1 << i;
    }
    Ok(mask)
}

/// `batch` with the columns of `schema`, by name (a no-op when it has exactly those).
fn select(batch: RecordBatch, schema: &arrow_schema::SchemaRef) -> PyResult<RecordBatch> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let idx: Vec<usize> = schema
        .fields()
        .iter()
        .map(|f| batch.schema().index_of(f.name()).expect("a projected column of the table"))
        .collect();
    let cols = idx.iter().map(|&i| batch.column(i).clone()).collect();
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), cols, &opts).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A streaming read of one table (`hlodump.scan`): an iterator of pyarrow record batches.
#[pyclass(name = "BatchStream", module = "hlodump._core")]
struct PyBatchStream {
    inner: std::sync::Mutex<crate::stream::BatchStream>,
    schema: arrow_schema::SchemaRef,
}

#[pymethods]
impl PyBatchStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch (waiting without the GIL; Ctrl-C stops the workers).
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        use crate::stream::{Failure, Poll};
        loop {
            let got = py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).poll(SIGNAL_POLL));
            match got {
                Poll::Batch(b) => {
                    let b = select(b, &self.schema)?;
                    return Ok(Some(pyo3_arrow::PyRecordBatch::new(b).into_pyarrow(py)?));
                }
                Poll::End => return Ok(None),
                Poll::Pending => {
                    if let Err(e) = py.check_signals() {
                        self.inner.lock().unwrap_or_else(|e| e.into_inner()).cancel();
                        return Err(e);
                    }
                }
                Poll::Failed(Failure::Error(e)) => return Err(to_pyerr(py, e)),
                Poll::Failed(Failure::Stop(stop)) => return Err(stop_to_pyerr(stop)),
                Poll::Failed(Failure::Panic(what)) => return Err(internal(py, what)),
            }
        }
    }

    /// The projected schema (pyarrow).
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pyo3_arrow::PySchema::new(self.schema.clone()).into_pyarrow(py)
    }

    /// The `errors` rows met so far (collect mode), as a pyarrow table.
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batches = self.inner.lock().unwrap_or_else(|e| e.into_inner()).errors().to_vec();
        let schema = Tables::schema_of("errors").expect("errors table");
        PyTable::try_new(batches, schema)?.into_pyarrow(py)
    }

    /// Stop reading (the workers stop at their next check).
    fn close(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).cancel();
    }
}

/// Stream `table` of `inputs` (see `read`) in batches of at most `batch_size` rows.
#[pyfunction(name = "scan")]
#[pyo3(signature = (inputs, table, *, columns=None, batch_size=65536, on_error="raise", threads=0, mmap=None, dumps=None, buffers=None, strict=false))]
#[allow(clippy::too_many_arguments)]
fn scan_inputs(
    inputs: Vec<PyInput>,
    table: &str,
    columns: Option<Vec<String>>,
    batch_size: i64,
    on_error: &str,
    threads: i64,
    mmap: Option<bool>,
    dumps: Option<Vec<String>>,
    buffers: Option<Vec<Option<pyo3_arrow::PyArray>>>,
    strict: bool,
) -> PyResult<PyBatchStream> {
    let opts = base_options(on_error, threads, mmap, strict)?;
    let idx = TABLE_NAMES
        .iter()
        .position(|n| *n == table)
        .ok_or_else(|| PyValueError::new_err(format!("unknown table {table:?} (tables: {})", TABLE_NAMES.join(", "))))?;
    if batch_size < 1 {
        return Err(PyValueError::new_err(format!("batch_size must be at least 1 (got {batch_size})")));
    }
    let mask = match &columns {
        Some(c) => Some(column_mask(table, c)?),
        None => None,
    };
    let inputs = make_inputs(inputs, dumps, buffers)?;
    // of the other tables only errors is handed out (a scan stops at the first error)
    let mut columns = vec![None; TABLE_NAMES.len()];
    columns[idx] = mask;
    let opts = opts.for_tables(Some(&[table]), Some(columns), &["errors"]);
    let spec = crate::stream::StreamSpec { table: idx, batch_rows: batch_size as usize };
    let s = crate::stream::stream(inputs, opts, spec, runtime::Abort::new()).map_err(|e| Python::attach(|py| to_pyerr(py, e)))?;
    Ok(PyBatchStream { inner: std::sync::Mutex::new(s), schema: Tables::schema_projected(table, mask).expect("known table") })
}

/// One input as Python hands it over: a `hlodump.io.plan.Input` record (read by attribute), or a
/// bare `(path, shown, explicit, error)` tuple (its dump from `dumps=`, else its shown path).
#[derive(FromPyObject)]
enum PyInput {
    Record {
        #[pyo3(attribute)]
        path: PathBuf,
        #[pyo3(attribute)]
        shown: String,
        #[pyo3(attribute)]
        explicit: bool,
        #[pyo3(attribute)]
        error: Option<String>,
        #[pyo3(attribute)]
        dump: String,
    },
    Tuple(PathBuf, String, bool, Option<String>),
}

/// The core's inputs from Python's, their dumps (`dumps=` wins over a record's) and their
/// in-memory bytes (`in_memory`), if any.
fn make_inputs(
    inputs: Vec<PyInput>,
    dumps: Option<Vec<String>>,
    buffers: Option<Vec<Option<pyo3_arrow::PyArray>>>,
) -> PyResult<Vec<Input>> {
    if let Some(d) = &dumps {
        if d.len() != inputs.len() {
            return Err(PyValueError::new_err("dumps must have one entry per input"));
        }
    }
    if let Some(b) = &buffers {
        if b.len() != inputs.len() {
            return Err(PyValueError::new_err("buffers must have one entry per input"));
        }
    }
    let mut dumps = dumps.map(|d| d.into_iter());
    let mut buffers = buffers.map(|b| b.into_iter());
    inputs
        .into_iter()
        .map(|input| {
            let (path, shown, explicit, error, own_dump) = match input {
                PyInput::Record { path, shown, explicit, error, dump } => (path, shown, explicit, error, Some(dump)),
                PyInput::Tuple(path, shown, explicit, error) => (path, shown, explicit, error, None),
            };
            let given = dumps.as_mut().and_then(|d| d.next());
            let dump = given.or(own_dump).unwrap_or_else(|| shown.clone());
            let data = buffers.as_mut().and_then(|b| b.next()).flatten().map(|a| in_memory(&shown, a)).transpose()?;
            Ok(Input { path, shown, explicit, error, dump, data })
        })
        .collect()
}

/// `on_error`, `threads`, `mmap` and `strict` as every entry point takes them.
fn base_options(on_error: &str, threads: i64, mmap: Option<bool>, strict: bool) -> PyResult<Options> {
    let collect = match on_error {
        "raise" => false,
        "collect" => true,
        _ => return Err(PyValueError::new_err("on_error must be 'raise' or 'collect'")),
    };
    let threads = usize::try_from(threads)
        .ok()
        .filter(|&t| runtime::validate_threads(t).is_ok())
        .ok_or_else(|| PyValueError::new_err(format!("threads must be between 1 and {} (got {threads})", runtime::MAX_THREADS)))?;
    let map = match mmap {
        None => MapPolicy::Auto,
        Some(true) => MapPolicy::Always,
        Some(false) => MapPolicy::Never,
    };
    Ok(Options { collect, threads, map, strict, ..Options::default() })
}

/// A read that was stopped: Ctrl-C or a failed reservation.
fn stop_to_pyerr(stop: runtime::Stop) -> PyErr {
    match stop {
        runtime::Stop::Cancelled => pyo3::exceptions::PyKeyboardInterrupt::new_err(()),
        runtime::Stop::OutOfMemory(bytes) => PyMemoryError::new_err(format!(
            "hlodump: out of memory while reading (could not reserve {bytes} bytes); \
             read fewer files at a time, or fewer tables or columns"
        )),
    }
}

fn internal(py: Python<'_>, what: String) -> PyErr {
    let msg = format!("internal error in the Rust core (please report): {what}");
    match pyo3::types::PyTuple::new(py, [msg]) {
        Ok(args) => py_exception(py, "HlodumpError", args),
        Err(e) => e,
    }
}

/// The table with every `string_view` column (also inside lists and structs) rebuilt to hold
/// only the bytes its rows reference, when its buffers hold at least twice that (plus 4 KiB):
/// what to send elsewhere (pickle, IPC), since a view column otherwise carries whole input
/// files. Other columns are shared, not copied.
#[pyfunction]
fn compact<'py>(py: Python<'py>, table: PyTable) -> PyResult<Bound<'py, PyAny>> {
    let (batches, schema) = table.into_inner();
    let out = py.detach(|| {
        batches
            .iter()
            .map(|b| RecordBatch::try_new(b.schema(), b.columns().iter().map(compact_array).collect()))
            .collect::<Result<Vec<_>, _>>()
    });
    let out = out.map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyTable::try_new(out, schema)?.into_pyarrow(py)
}

fn compact_array(a: &ArrayRef) -> ArrayRef {
    use arrow_array::cast::AsArray;
    match a.data_type() {
        DataType::Utf8View => {
            let s = a.as_string_view();
            let held: usize = s.data_buffers().iter().map(|b| b.len()).sum();
            if held > 2 * s.total_buffer_bytes_used() + 4096 {
                Arc::new(s.gc())
            } else {
                a.clone()
            }
        }
        DataType::List(field) => {
            let l = a.as_list::<i32>();
            Arc::new(ListArray::new(field.clone(), l.offsets().clone(), compact_array(l.values()), l.nulls().cloned()))
        }
        DataType::Struct(fields) => {
            let st = a.as_struct();
            Arc::new(StructArray::new(fields.clone(), st.columns().iter().map(compact_array).collect(), st.nulls().cloned()))
        }
        _ => a.clone(),
    }
}

/// Every table's schema, in canonical order: `(name, pyarrow.Schema, doc line)` from the
/// `tables!` definitions (names, Arrow types, nullability; dictionary or view is in the type).
/// `hlodump.schema` is built from this.
#[pyfunction]
fn table_schemas<'py>(py: Python<'py>) -> PyResult<Vec<(&'static str, Bound<'py, PyAny>, String)>> {
    TABLE_NAMES
        .iter()
        .map(|&name| {
            let schema = Tables::schema_of(name).expect("known table");
            let doc = Tables::doc_of(name).expect("known table");
            Ok((name, pyo3_arrow::PySchema::new(schema).into_pyarrow(py)?, doc))
        })
        .collect()
}

/// Put the SIGBUS guard back in front of handlers installed after it (`sigbus::rearm`).
#[pyfunction]
fn rearm_sigbus() {
    crate::sigbus::rearm()
}

/// Classify a dump file name (FORMATS.md §1): the `files` columns that come from the name. A
/// path (`a/module_0024.jit_f/module.mlir`) also takes the module of its nearest per-module
/// folder when the base name names none (`files::classify_path`); a bare base name is
/// classified by itself.
#[pyfunction]
fn classify_name<'py>(py: Python<'py>, basename: &str) -> PyResult<Bound<'py, PyDict>> {
    let n = crate::files::classify_path(basename);
    let d = PyDict::new(py);
    d.set_item("kind", n.kind.as_str())?;
    d.set_item("module_id", n.module_id)?;
    d.set_item("module_name", n.module_name)?;
    d.set_item("stage", n.stage)?;
    d.set_item("backend", n.backend)?;
    d.set_item("pass_index", n.pass_index)?;
    d.set_item("pipeline", n.pipeline)?;
    d.set_item("after_pass", n.after_pass)?;
    d.set_item("before_pass", n.before_pass)?;
    d.set_item("substep", n.substep)?;
    Ok(d)
}

/// Content kind of a file's bytes (first non-empty line).
#[pyfunction]
fn sniff(data: &[u8]) -> &'static str {
    crate::formats::sniff(data).as_str()
}

/// The format registry (`formats.rs`) as data, for the test that holds the reference's
/// (`reference/formats.py`) equal to it: per format its name, content kinds, tables and content
/// rules (`Sniff`: first-line prefixes, two-line rules, markers, the kinds of its line and
/// fallback tests), then
/// the rules of the kinds no format parses under the name "".
#[pyfunction]
fn _formats() -> Vec<FormatFacts> {
    use crate::formats::{Format, Sniff, UNPARSED};
    let facts = |name: &'static str, contents: Vec<&'static str>, tables: Vec<&'static str>, s: &Sniff| FormatFacts {
        name,
        contents,
        tables,
        prefixes: s.prefixes.iter().map(|&(p, k)| (p.to_vec(), k.as_str())).collect(),
        second_line: s.second_line.iter().map(|&(p, l, k)| (p.to_vec(), l.to_vec(), k.as_str())).collect(),
        line: s.line.map(|(_, k)| k.as_str()),
        fallback: s.fallback.map(|(_, k)| k.as_str()),
        markers: s.anywhere.iter().map(|m| m.to_vec()).collect(),
        binary: s.binary.map(|(_, k)| k.as_str()),
    };
    let mut out: Vec<FormatFacts> = Format::ALL
        .iter()
        .map(|f| {
            let spec = f.spec();
            facts(spec.name, spec.contents.iter().map(|c| c.as_str()).collect(), spec.tables.to_vec(), &spec.sniff)
        })
        .collect();
    out.push(facts("", Vec::new(), Vec::new(), &UNPARSED));
    out
}

/// One registry entry as `_formats` returns it (a dict).
#[derive(IntoPyObject)]
struct FormatFacts {
    name: &'static str,
    contents: Vec<&'static str>,
    tables: Vec<&'static str>,
    prefixes: Vec<(Vec<u8>, &'static str)>,
    second_line: Vec<(Vec<u8>, Vec<u8>, &'static str)>,
    line: Option<&'static str>,
    fallback: Option<&'static str>,
    markers: Vec<Vec<u8>>,
    binary: Option<&'static str>,
}

/// The decoded custom-call body of a `backend_config` (base64 of its JSON `"body"` string, or of
/// the whole config), or None when that text is not base64.
#[pyfunction]
#[pyo3(signature = (backend_config))]
fn decode_body<'py>(py: Python<'py>, backend_config: Option<&str>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
    let decoded = crate::hlo::decode_body(backend_config.unwrap_or("").as_bytes())?;
    Some(pyo3::types::PyBytes::new(py, &decoded))
}

/// The value of attribute `key` in an instruction's `attributes` text (one pair of enclosing
/// braces taken off), split as the HLO parser splits it; None when the key is absent;
/// `ValueError` for text of a form only the general grammar reads.
#[pyfunction]
#[pyo3(signature = (attributes, key))]
fn attribute_value(attributes: &str, key: &str) -> PyResult<Option<String>> {
    match crate::hlo::attributes::attribute_value(attributes.as_bytes(), key.as_bytes()) {
        Ok(v) => Ok(v.map(|v| String::from_utf8_lossy(v).into_owned())),
        Err(e) => Err(pyo3::exceptions::PyValueError::new_err(format!("attributes not split: {e:?}"))),
    }
}

/// Whether XLA knows the HLO opcode `op` (the parser's list, `hlo::rules::known_opcode`; an
/// unknown one is a newer XLA's: the cost analysis counts it as unknown, never as 0).
#[pyfunction]
fn known_opcode(op: &str) -> bool {
    crate::hlo::rules::known_opcode(op.as_bytes())
}

/// Pages of mapped files that shrank while in use and now read as zeros (see `sigbus.rs`).
#[pyfunction]
fn mapped_pages_lost() -> usize {
    crate::sigbus::zeroed_pages()
}

/// Lower the longest line a read accepts (default and maximum: 2^31-1 bytes, the most one
/// Arrow text value holds); returns the previous limit. For tests, which prove the 2 GiB rule
/// on small inputs; process-wide.
#[pyfunction]
fn _set_max_line_len(n: usize) -> usize {
    crate::lines::set_max_line_len(n)
}

/// Lower the most lines a file may have (default and maximum: 2^31-1, what an int32 `line`
/// column numbers); returns the previous limit. For tests, which prove the rule on small
/// inputs; process-wide.
#[pyfunction]
fn _set_max_lines(n: u64) -> u64 {
    crate::lines::set_max_lines(n)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_inputs, m)?)?;
    m.add_function(wrap_pyfunction!(scan_inputs, m)?)?;
    m.add_class::<PyBatchStream>()?;
    m.add_function(wrap_pyfunction!(classify_name, m)?)?;
    m.add_function(wrap_pyfunction!(sniff, m)?)?;
    m.add_function(wrap_pyfunction!(mapped_pages_lost, m)?)?;
    m.add_function(wrap_pyfunction!(decode_body, m)?)?;
    m.add_function(wrap_pyfunction!(attribute_value, m)?)?;
    m.add_function(wrap_pyfunction!(known_opcode, m)?)?;
    m.add_function(wrap_pyfunction!(compact, m)?)?;
    m.add_function(wrap_pyfunction!(rearm_sigbus, m)?)?;
    m.add_function(wrap_pyfunction!(table_schemas, m)?)?;
    m.add_function(wrap_pyfunction!(_set_max_line_len, m)?)?;
    m.add_function(wrap_pyfunction!(_set_max_lines, m)?)?;
    m.add_function(wrap_pyfunction!(_formats, m)?)?;
    m.add("MAX_THREADS", runtime::MAX_THREADS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
