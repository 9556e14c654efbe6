//! The tables we produce: the one definition of every table's columns, Arrow types and doc
//! line (`python/hlodump/schema.py` reads them from `_core.table_schemas()`).
//!
//! `Tables` holds a builder per table plus the input blocks that text columns point into; one
//! `Tables` is filled by one thread (for one file, or a group of small files sharing an arena)
//! and finished into one Arrow record batch per table.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{Field, Fields, Schema, SchemaRef};

use crate::columns::*;
use crate::source::{Source, SourceRef};

macro_rules! tables {
    ($( $(#[doc = $doc:literal])+ $field:ident : $tname:ident { $($col:ident : $ty:ty),* $(,)? } )*) => {
        $(
            $(#[doc = $doc])+
            #[derive(Default)]
            pub struct $tname {
                $(pub $col: $ty,)*
                /// The projected columns (bit i: column i), None: all (`project`).
                proj: Option<u64>,
            }

            impl $tname {
                pub const NAME: &'static str = stringify!($field);
                /// Column names in schema order.
                pub const COLUMNS: &'static [&'static str] = &[$(stringify!($col)),*];
                /// What a row is: the table's doc comment in the `tables!` list below, line by
                /// line (exported as the doc line of `hlodump.schema`).
                pub const DOC: &'static [&'static str] = &[$($doc),+];

                pub fn schema() -> SchemaRef {
                    Self::schema_projected(None)
                }

                /// The schema of the columns in `mask` (None: all), in schema order.
                pub fn schema_projected(mask: Option<u64>) -> SchemaRef {
                    let all = [$(Field::new(stringify!($col), <$ty as Column>::data_type(), <$ty as Column>::nullable())),*];
                    Arc::new(Schema::new(all.into_iter().enumerate().filter(|(i, _)| projected(mask, *i)).map(|(_, f)| f).collect::<Vec<_>>()))
                }

                /// Build only the columns in `mask` from now on (the others count rows, or are
                /// built and dropped where that is cheaper; `Column::set_built`).
                pub fn project(&mut self, mask: u64) {
                    self.proj = Some(mask);
                    let mut i = 0usize;
                    $(
                        Column::set_built(&mut self.$col, projected(Some(mask), i));
                        i += 1;
                    )*
                    let _ = i;
                }

                /// False when the read's projection keeps no column of this table (`tables=`
                /// without it, or a `scan` of another table): the formats may then skip the work
                /// of rows nobody will see (e.g. decoding custom-call bodies).
                pub fn is_wanted(&self) -> bool {
                    self.proj != Some(0)
                }

                /// Every row complete: all columns equally long, no list holding items of an
                /// unclosed row. Only then can the table be flushed.
                pub fn is_complete(&self) -> bool {
                    let n = self.len();
                    true $(&& Column::len(&self.$col) == n && !Column::pending(&self.$col))*
                }

                /// The rows so far as a record batch (projected); the builder goes on empty,
                /// with the same projection and room for as many rows again (a stream flushes
                /// every `batch_rows` rows: without it every column of every batch would regrow
                /// from nothing, copying itself about log2(batch_rows) times).
                pub fn flush(&mut self, blocks: &[Buffer]) -> RecordBatch {
                    let proj = self.proj;
                    let done = std::mem::take(self);
                    if let Some(m) = proj {
                        self.project(m);
                    }
                    self.reserve(done.len());
                    done.finish(blocks)
                }

                /// Number of rows (all columns have the same length once a row is complete).
                pub fn len(&self) -> usize {
                    [$(Column::len(&self.$col)),*][0]
                }

                pub fn is_empty(&self) -> bool {
                    self.len() == 0
                }

                /// Room for `additional` more rows in every column (so that none regrows).
                pub fn reserve(&mut self, additional: usize) {
                    $(Column::reserve(&mut self.$col, additional);)*
                }

                /// The record batch of the projected columns (the others are never finished).
                pub fn finish(self, blocks: &[Buffer]) -> RecordBatch {
                    let mask = self.proj;
                    let rows = self.len();
                    let mut arrays: Vec<ArrayRef> = Vec::new();
                    let mut i = 0usize;
                    $(
                        if projected(mask, i) {
                            arrays.push(Column::finish(self.$col, blocks));
                        }
                        i += 1;
                    )*
                    let _ = i;
                    check_lengths(Self::NAME, &arrays);
                    // a projection may keep no column at all: the row count still holds
                    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
                    RecordBatch::try_new_with_options(Self::schema_projected(mask), arrays, &opts)
                        .expect("columns match their schema")
                }
            }
        )*

        /// One builder per table, and the input blocks their text columns point into.
        #[derive(Default)]
        pub struct Tables {
            $(pub $field: $tname,)*
            /// (file, kind, token) of every `notes` row so far: one note per file and token
            /// (`FileCtx::note`).
            pub notes_seen: std::collections::HashSet<(i32, &'static str, Vec<u8>)>,
            blocks: Vec<Buffer>,
            /// A streaming read (`scan`): where full batches of its table go.
            stream: Option<Box<Stream>>,
        }

        /// Every table name, in canonical order (`hlodump.schema.TABLE_NAMES` is this list).
        pub const TABLE_NAMES: &[&str] = &[$(stringify!($field)),*];

        impl Tables {
            /// The schema of table `name`.
            pub fn schema_of(name: &str) -> Option<SchemaRef> {
                Self::schema_projected(name, None)
            }

            /// The schema of table `name` projected to `mask` (None: all columns).
            pub fn schema_projected(name: &str, mask: Option<u64>) -> Option<SchemaRef> {
                match name {
                    $(stringify!($field) => Some($tname::schema_projected(mask)),)*
                    _ => None,
                }
            }

            /// The doc line of table `name`: its doc comment, lines joined by spaces.
            pub fn doc_of(name: &str) -> Option<String> {
                let lines: &[&str] = match name {
                    $(stringify!($field) => $tname::DOC,)*
                    _ => return None,
                };
                Some(lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "))
            }

            /// The column names of table `name`, in schema order.
            pub fn columns_of(name: &str) -> Option<&'static [&'static str]> {
                match name {
                    $(stringify!($field) => Some($tname::COLUMNS),)*
                    _ => None,
                }
            }

            /// Add `by` to every column named `line` (rows parsed from a chunk of a file
            /// numbered its lines from 1; see `split.rs`). Generated from the table
            /// definitions, so a new table's `line` column is shifted too.
            pub fn shift_lines(&mut self, by: i64) {
                if by == 0 {
                    return;
                }
                $($(
                    if stringify!($col) == "line" {
                        ShiftLine::shift(&mut self.$field.$col, by);
                    }
                )*)*
            }

            /// Finish every table (in canonical order) into one record batch each.
            pub fn finish(self) -> Vec<(&'static str, RecordBatch)> {
                let blocks = self.blocks;
                vec![$((stringify!($field), self.$field.finish(&blocks))),*]
            }

            /// Project every table: `masks[i]` for table `TABLE_NAMES[i]` (None: all columns).
            pub fn project(&mut self, masks: &[Option<u64>]) {
                let mut i = 0usize;
                $(
                    if let Some(Some(m)) = masks.get(i) {
                        self.$field.project(*m);
                    }
                    i += 1;
                )*
                let _ = i;
            }

            /// Rows of table `idx`. On the streaming hot path (`line_end`, every line): integer
            /// compares, not a match on the table's name.
            #[inline]
            fn table_len(&self, idx: usize) -> usize {
                let mut i = 0usize;
                $(
                    if idx == i {
                        return self.$field.len();
                    }
                    i += 1;
                )*
                let _ = i;
                unreachable!("table index {idx} out of range")
            }

            fn table_complete(&self, idx: usize) -> bool {
                match TABLE_NAMES[idx] {
                    $(stringify!($field) => self.$field.is_complete(),)*
                    _ => unreachable!(),
                }
            }

            /// Flush table `idx` (see the table's `flush`).
            pub fn flush_table(&mut self, idx: usize) -> RecordBatch {
                match TABLE_NAMES[idx] {
                    $(stringify!($field) => self.$field.flush(&self.blocks),)*
                    _ => unreachable!(),
                }
            }
        }
    };
}

// (Tables with the same kinds of columns look alike to a copy finder: each is one table of the
// schema, declared once, not copied logic.)
tables! {
    /// One row per file seen: its path, what its name and first line say it is, its dump, and
    /// why it could not be read (if so).
    files: Files {
        file_id: I32, path: Text, kind: DictText, content_kind: OptDictText, module_id: OptI32,
        module_name: OptText, stage: OptDictText, backend: OptDictText, pass_index: OptI32,
        pipeline: OptDictText, after_pass: OptDictText, before_pass: OptDictText,
        substep: OptDictText, size_bytes: I64, parsed: Bool, error: OptText, dump: DictText,
    }
    /// One row per `allocation N: size S<flags>:` line of a buffer assignment.
    allocations: Allocations {
        file_id: I32, allocation: I64, size: I64, color: I32, is_thread_local: Bool,
        is_constant: Bool, is_maybe_live_out: Bool, is_preallocated_temp: Bool, is_output: Bool,
        parameter: OptI64, parameter_shape: OptDict, parameter_shape_index: OptDict,
        output_shape: OptDict, page: OptI32, flags: Str, line: I32,
    }
    /// One row per `value:` line under an allocation: which value sits where in it.
    assignments: Assignments {
        file_id: I32, allocation: I64, value_id: I64, instruction: Str, shape_index: Dict,
        is_phi: Bool, color: I32, offset: I64, size: I64, shape: Dict, line: I32,
    }
    /// One row per value block under `Used values:`, with its positions, uses and defining
    /// instruction.
    values: Values {
        file_id: I32, value_id: I64, instruction: Str, shape_index: Dict, is_phi: Bool, color: I32,
        positions: StructList<PositionItems>, uses: StructList<UseItems>, uses_initialized: Bool,
        defining_instruction: Str, defining_opcode: OptDict, defining_op_name: OptStr,
        defining_shape: OptDict, defining_source_file: OptDict, defining_source_line: OptI32,
        defining_fusion_kind: OptDict, defining_custom_call_target: OptDict, line: I32,
    }
    /// One row per `InstructionSequence` entry: the instruction scheduled at each position.
    schedule: Schedule { file_id: I32, position: I32, instruction: Str, line: I32 }
    /// One row per `BufferLiveRange` entry `NAME{IDX}:start-end`.
    live_ranges: LiveRanges {
        file_id: I32, buffer: Str, instruction: Str, shape_index: Dict, start: I32, end: I32,
        line: I32,
    }
    /// One row per buffer of the `Live ranges at T (peak):` list.
    peak: Peak {
        file_id: I32, time: I32, buffer: Str, instruction: Str, shape_index: Dict, bytes: I64,
        cumulative_bytes: I64, cumulative_is_printed: Bool, line: I32,
    }
    /// One row per line of the `Stack trace breakdown for peak usage` tree.
    peak_breakdown: PeakBreakdown {
        file_id: I32, row: I32, parent_row: OptI32, depth: I32, label: Str, percent: F64,
        total_bytes: I64, current_bytes: I64, remaining_bytes: I64, line: I32,
    }
    /// One row per allocation or offset group of a memory-usage report (every layout XLA
    /// printed).
    memory_report: MemoryReport {
        file_id: I32, memory_space: OptDict, color: OptI32, table: I32, allocation: OptI64,
        cumulative_bytes: OptI64, percent: OptI32, size: I64, size_is_rounded: Bool, offset: OptI64,
        used_by_n_values: OptI32, shapes: OptDict, row_kind: DictText, remaining_bytes: OptI64,
        flags: OptStr, line: I32,
    }
    /// Every number a dump states about itself that is not a row of another table, one row each.
    totals: Totals {
        file_id: I32, section: DictText, key: DictText, color: OptI32, value: I64, line: I32,
    }
    /// One row per event of XLA's heap-simulator trace (an after-optimizations `HloProto`): a
    /// buffer allocated, freed or sharing another's memory, in the simulator's order.
    heap_trace: HeapTrace {
        file_id: I32, step: I64, kind: DictText, buffer_id: I64, size: I64, instruction: DictText,
        computation: DictText, share_with: OptI64,
    }
    /// One row per `HloModule` header.
    modules: Modules {
        file_id: I32, name: Str, is_scheduled: Bool, entry_computation_layout: OptStr,
        attributes: Str, line: I32, module_index: I32,
    }
    /// One row per computation header of an HLO module.
    computations: Computations {
        file_id: I32, computation_id: I32, name: Str, is_entry: Bool, signature: Str,
        result_shape: Dict, execution_thread: OptDict, line: I32, module_index: I32,
    }
    /// One row per HLO instruction.
    instructions: Instructions {
        file_id: I32, computation_id: I32, instruction_id: I32, name: Str, is_root: Bool,
        opcode: Dict, shape: Dict, operands: StrList, operand_index: PathList, operand_text: Str, called_computations: StrList,
        attributes: Str, op_name: OptDict, op_type: OptDict, source_file: OptDict,
        source_line: OptI32, source_function: OptDict, stack_frame_id: OptI32,
        custom_call_target: OptDict, backend_config: OptStr, fusion_kind: OptDict,
        sharding: OptDict, line: I32, offset: I64,
    }
    /// One row per `StackFrames` entry, joined with its file location and names.
    stack_frames: StackFrames {
        file_id: I32, frame_id: I64, parent_frame_id: OptI64, file_location_id: I64,
        file_name: OptDict, function_name: OptDict, source_line: OptI32, end_line: OptI32,
        column: OptI32, end_column: OptI32, line: I32,
    }
    /// One row per custom-call instruction: its body's size, format and kernel name.
    custom_calls: CustomCalls {
        file_id: I32, instruction_id: I32, name: Str, target: Dict, body_length: I64,
        decoded_length: OptI64, format: DictText, kernel_name: OptStr,
    }
    /// One row per line of a GPU thunk sequence.
    thunks: Thunks {
        file_id: I32, thunk_id: I32, printed_id: OptI64, parent_thunk_id: OptI32, depth: I32, kind: OptDict,
        section: OptDict, annotation: Str, line: I32, instruction: OptStr, kernel_name: OptStr,
        blocks_x: OptI64, blocks_y: OptI64, blocks_z: OptI64, threads_x: OptI64,
        threads_y: OptI64, threads_z: OptI64, shared_memory_bytes: OptI64,
    }
    /// One row per `thunk_metadata { … }` message of a GPU `*.thunk_metadata.txt`: the HLO
    /// instruction (profile annotation) and kind of the thunk XLA printed with that id.
    thunk_metadata: ThunkMetadata {
        file_id: I32, thunk_id: OptI64, instruction: OptStr, kind: OptDict, line: I32,
    }
    /// One row per figure an out-of-memory report states.
    oom_reports: OomReports {
        file_id: I32, report_id: I32, backend: DictText, memory_space: OptDict, section: DictText,
        key: DictText, bytes: OptI64, value: Str, line: I32,
    }
    /// One row per buffer or allocation an out-of-memory report lists.
    oom_buffers: OomBuffers {
        file_id: I32, report_id: I32, rank: I32, size_bytes: I64, size: Str,
        operator: OptStr, op_type: OptStr, op_name: OptStr, source_file: OptStr,
        source_line: OptI32, shape: OptStr, unpadded_size_bytes: OptI64, padding_bytes: OptI64,
        padding: OptStr, xla_label: OptStr, allocation_type: OptDict,
        entry_parameter_subshape: OptStr, line: I32,
    }
    /// One row per field of a `*.debug_options` file or a `compile_options.textproto`: which
    /// XLA flags and compile options made this compile (nested messages as dotted keys).
    options: OptionRows { file_id: I32, source: DictText, key: Text, value: Str, line: I32 }
    /// One row per problem that `on_error="collect"` could not read.
    errors: Errors { file_id: I32, line: I32, column: I32, message: Text, text: Text }
    /// One row per thing a dump prints that this version does not know (an allocation flag, an
    /// attribute, a header field, a section or line form inside a known block: a newer XLA),
    /// once per file, kind and token; the row it sits in was kept from what is known and the
    /// unknown text kept raw (`allocations.flags`, `instructions.attributes`, …).
    notes: Notes { file_id: I32, line: I32, column: I32, kind: DictText, token: Text, text: Text, message: Text }
}

/// Whether column `i` is in `mask` (None: every column is).
#[inline]
fn projected(mask: Option<u64>, i: usize) -> bool {
    mask.is_none_or(|m| i < 64 && (m >> i) & 1 == 1)
}

/// Where a streaming read sends the batches of its one table (`Tables::line_end`).
pub struct Stream {
    /// Index into `TABLE_NAMES`.
    pub table: usize,
    /// Hand out a batch once the table holds this many rows.
    pub batch_rows: usize,
    /// Takes each batch (blocking while the reader is behind: that is the backpressure).
    pub sink: Box<dyn FnMut(RecordBatch) -> crate::error::Result<()> + Send>,
}

impl Tables {
    /// Stream table `stream.table` out in batches while parsing (`line_end`, `end_stream`).
    pub fn set_stream(&mut self, stream: Stream) {
        self.stream = Some(Box::new(stream));
    }

    /// Called by the format drivers between lines: a streaming read flushes its table here
    /// once it holds `batch_rows` complete rows. Costs one branch otherwise.
    #[inline]
    pub fn line_end(&mut self) -> crate::error::Result<()> {
        match &self.stream {
            Some(s) if self.table_len(s.table) >= s.batch_rows => self.send(false),
            _ => Ok(()),
        }
    }

    /// True for a streaming read's table set (`scan`).
    pub fn is_streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// The end of the input: the streamed table's last rows, whatever their number.
    pub fn end_stream(&mut self) -> crate::error::Result<()> {
        if self.stream.is_some() {
            self.send(true)
        } else {
            Ok(())
        }
    }

    /// A strict read stops at an error: a stream first hands out the rows before it (the
    /// consumer then gets the error, in file order).
    #[cold]
    pub fn end_stream_on_error(&mut self) {
        let _ = self.end_stream();
    }

    #[cold]
    fn send(&mut self, last: bool) -> crate::error::Result<()> {
        let idx = self.stream.as_ref().expect("a stream").table;
        if self.table_len(idx) == 0 || !(last || self.table_complete(idx)) {
            return Ok(());
        }
        let batch = self.flush_table(idx);
        (self.stream.as_mut().expect("a stream").sink)(batch)
    }

    /// Take the stream off (what finishing a streamed table set does first).
    pub fn take_stream(&mut self) -> Option<Box<Stream>> {
        self.stream.take()
    }
}

/// Columns a line shift applies to: only `I32` columns named `line` are ever shifted (see
/// `Tables::shift_lines`); every other column type ignores it.
pub trait ShiftLine {
    fn shift(&mut self, _by: i64) {}
}

/// `line` columns are int32 (issue 26: output size). A file of more lines than that numbers is
/// refused before it is parsed (`lines::check_line_count`), so every line number of a file, and
/// every shifted one, fits: the saturating add only guards that invariant (never a wrap).
impl ShiftLine for I32 {
    fn shift(&mut self, by: i64) {
        let by = i32::try_from(by).unwrap_or(i32::MAX);
        self.0.iter_mut().for_each(|v| *v = v.saturating_add(by));
    }
}

macro_rules! no_shift {
    ($($t:ty),*) => { $(impl ShiftLine for $t {})* };
}
no_shift!(I64, OptI32, OptI64, Str, Text, OptText, F64, Bool, StrList, PathList, ViewCol, Dict, DictCol, DictText, OptDictText);
impl<C> ShiftLine for StructList<C> {}

/// Items of `values.positions`: `struct<instruction, shape_index>` (shape_index a dictionary).
#[derive(Default)]
pub struct PositionItems {
    pub instruction: Str,
    pub shape_index: Dict,
}

impl StructItems for PositionItems {
    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("instruction", <Str as Column>::data_type(), false),
            Field::new("shape_index", <Dict as Column>::data_type(), false),
        ])
    }
    fn count(&self) -> usize {
        self.instruction.len()
    }
    fn finish(self, blocks: &[Buffer]) -> Vec<ArrayRef> {
        vec![self.instruction.finish(blocks), self.shape_index.finish(blocks)]
    }
}

/// Items of `values.uses`: `struct<instruction, operand, shape_index>`.
#[derive(Default)]
pub struct UseItems {
    pub instruction: Str,
    pub operand: I32,
    pub shape_index: Dict,
}

impl StructItems for UseItems {
    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("instruction", <Str as Column>::data_type(), false),
            Field::new("operand", <I32 as Column>::data_type(), false),
            Field::new("shape_index", <Dict as Column>::data_type(), false),
        ])
    }
    fn count(&self) -> usize {
        self.instruction.len()
    }
    fn finish(self, blocks: &[Buffer]) -> Vec<ArrayRef> {
        vec![self.instruction.finish(blocks), self.operand.finish(blocks), self.shape_index.finish(blocks)]
    }
}

impl Tables {
    /// Make `source`'s bytes available to text columns; returns how to point into them.
    /// Registering the same buffer twice (files sharing an arena) reuses its blocks.
    pub fn add_source(&mut self, source: &Source) -> SourceRef {
        let bytes = source.bytes();
        let windows = source.windows();
        let first = windows.first().map(|w| w.as_ptr());
        if let Some(i) = self.blocks.iter().position(|b| Some(b.as_ptr()) == first && b.len() == windows[0].len()) {
            return SourceRef::new(bytes, i as u32, windows.len() as u32);
        }
        let first_block = self.blocks.len() as u32;
        let n = windows.len() as u32;
        self.blocks.extend(windows);
        SourceRef::new(bytes, first_block, n)
    }
}
