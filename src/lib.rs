//! hlodump: XLA compiler dumps (HLO module text, buffer assignment, live ranges, memory-usage
//! reports) as zero-copy Apache Arrow tables.
//!
//! The core is pure Rust (no Python needed for `cargo test`, benches and fuzzing): `read`
//! plans and loads inputs, the format modules parse them line by line into `tables`, whose text
//! columns are views into the inputs (`source`, `columns`). `python` (feature `python`) is the
//! thin PyO3 edge that maturin builds into `hlodump._core`.

#[cfg(target_os = "linux")]
pub mod alloc;
pub mod allocation_line;
pub mod buffer_assignment;
pub mod bytes;
pub mod columns;
pub mod driver;
pub mod error;
pub mod files;
pub mod formats;
pub mod hlo;
pub mod hlo_proto;
pub mod lex;
pub mod lines;
pub mod memory_report;
pub mod oom;
pub mod options;
pub mod read;
pub mod runtime;
pub mod sigbus;
pub mod source;
pub mod split;
pub mod stream;
pub mod tables;
pub mod thunks;

#[cfg(feature = "python")]
mod python;

/// Column buffers are mappings of their own, given back when the tables are dropped (`alloc`).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: alloc::ReturningAllocator = alloc::ReturningAllocator;

pub use error::{Error, ParseError};
pub use read::{read, Input, MapPolicy, Options};
pub use tables::{Tables, TABLE_NAMES};
