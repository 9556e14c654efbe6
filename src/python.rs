//! The Python edge (`hlodump._core`): argument conversion, GIL release, errors → Python
//! exceptions, tables → pyarrow through the Arrow PyCapsule interface. No parsing here.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PyTable;

use crate::error::Error;
use crate::read::{Input, MapPolicy, Options};
use crate::tables::Tables;

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

/// Parse `inputs` — a list of (path, shown_path, explicit) — into a dict of pyarrow tables.
/// `dumps` (one per input, `files.dump`) defaults to each input's shown path.
#[pyfunction(name = "read")]
#[pyo3(signature = (inputs, tables=None, on_error="raise", threads=0, mmap=None, progress=None, dumps=None))]
fn read_inputs<'py>(
    py: Python<'py>,
    inputs: Vec<(PathBuf, String, bool)>,
    tables: Option<Vec<String>>,
    on_error: &str,
    threads: usize,
    mmap: Option<bool>,
    progress: Option<Py<PyAny>>,
    dumps: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let collect = match on_error {
        "raise" => false,
        "collect" => true,
        _ => return Err(PyValueError::new_err("on_error must be 'raise' or 'collect'")),
    };
    let map = match mmap {
        None => MapPolicy::Auto,
        Some(true) => MapPolicy::Always,
        Some(false) => MapPolicy::Never,
    };
    if let Some(d) = &dumps {
        if d.len() != inputs.len() {
            return Err(PyValueError::new_err("dumps must have one entry per input"));
        }
    }
    let mut dumps = dumps.map(|d| d.into_iter());
    let inputs: Vec<Input> = inputs
        .into_iter()
        .map(|(path, shown, explicit)| {
            let dump = dumps.as_mut().and_then(|d| d.next()).unwrap_or_else(|| shown.clone());
            Input { path, shown, explicit, dump }
        })
        .collect();
    let mut opts = Options { collect, threads, map, ..Options::default() };
    if let Some(wanted) = &tables {
        // parse only the formats that can produce a requested table
        opts = opts.for_tables(wanted);
    }
    let report = |files: u64, bytes: u64| {
        if let Some(cb) = &progress {
            Python::attach(|py| {
                let _ = cb.call1(py, (files, bytes));
            });
        }
    };
    // Parse without the GIL; a panic anywhere (also on a worker thread: rayon re-raises it
    // here) becomes an exception instead of tearing down the interpreter.
    let result = py.detach(|| catch_unwind(AssertUnwindSafe(|| crate::read::read(&inputs, &opts, &report))));
    let batches = match result {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Err(to_pyerr(py, e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            let msg = format!("internal error in the Rust core (please report): {what}");
            return Err(py_exception(py, "HlodumpError", pyo3::types::PyTuple::new(py, [msg])?));
        }
    };
    let out = PyDict::new(py);
    for (name, batches) in batches {
        if let Some(wanted) = &tables {
            if !wanted.iter().any(|w| w == name) && name != "files" && name != "errors" {
                continue;
            }
        }
        let schema = Tables::schema_of(name).expect("known table");
        let table = PyTable::try_new(batches, schema)?;
        out.set_item(name, table.into_pyarrow(py)?)?;
    }
    Ok(out)
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
    crate::files::sniff(data).as_str()
}

/// The decoded custom-call body of a `backend_config` (base64 of its JSON `"body"` string, or of
/// the whole config), or None when that text is not base64.
#[pyfunction]
#[pyo3(signature = (backend_config))]
fn decode_body<'py>(py: Python<'py>, backend_config: Option<&str>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
    let decoded = crate::hlo::decode_body(backend_config.unwrap_or("").as_bytes())?;
    Some(pyo3::types::PyBytes::new(py, &decoded))
}

/// Pages of mapped files that shrank while in use and now read as zeros (see `sigbus.rs`).
#[pyfunction]
fn mapped_pages_lost() -> usize {
    crate::sigbus::zeroed_pages()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_inputs, m)?)?;
    m.add_function(wrap_pyfunction!(classify_name, m)?)?;
    m.add_function(wrap_pyfunction!(sniff, m)?)?;
    m.add_function(wrap_pyfunction!(mapped_pages_lost, m)?)?;
    m.add_function(wrap_pyfunction!(decode_body, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
