//! The tables we produce, column for column as `python/hlodump/schema.py` defines them.
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
    ($( $field:ident : $tname:ident { $($col:ident : $ty:ty),* $(,)? } )*) => {
        $(
            #[derive(Default)]
            pub struct $tname { $(pub $col: $ty,)* }

            impl $tname {
                pub const NAME: &'static str = stringify!($field);

                pub fn schema() -> SchemaRef {
                    Arc::new(Schema::new(vec![
                        $(Field::new(stringify!($col), <$ty as Column>::data_type(), <$ty as Column>::nullable())),*
                    ]))
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

                pub fn finish(self, blocks: &[Buffer]) -> RecordBatch {
                    let arrays: Vec<ArrayRef> = vec![$(Column::finish(self.$col, blocks)),*];
                    check_lengths(Self::NAME, &arrays);
                    RecordBatch::try_new(Self::schema(), arrays).expect("columns match their schema")
                }
            }
        )*

        /// One builder per table, and the input blocks their text columns point into.
        #[derive(Default)]
        pub struct Tables {
            $(pub $field: $tname,)*
            blocks: Vec<Buffer>,
        }

        /// Every table name, in the canonical order of `schema.py`.
        pub const TABLE_NAMES: &[&str] = &[$(stringify!($field)),*];

        impl Tables {
            /// The schema of table `name`.
            pub fn schema_of(name: &str) -> Option<SchemaRef> {
                match name {
                    $(stringify!($field) => Some($tname::schema()),)*
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
        }
    };
}

tables! {
    files: Files {
        file_id: I32, path: Text, kind: Text, content_kind: OptText, module_id: OptI32,
        module_name: OptText, stage: OptText, backend: OptText, pass_index: OptI32,
        pipeline: OptText, after_pass: OptText, before_pass: OptText, substep: OptText,
        size_bytes: I64, parsed: Bool, error: OptText, dump: Text,
    }
    allocations: Allocations {
        file_id: I32, allocation: I64, size: I64, color: I32, is_thread_local: Bool,
        is_constant: Bool, is_maybe_live_out: Bool, is_preallocated_temp: Bool, is_output: Bool,
        parameter: OptI64, parameter_shape: OptStr, parameter_shape_index: OptStr,
        output_shape: OptStr, flags: Str, line: I64,
    }
    assignments: Assignments {
        file_id: I32, allocation: I64, value_id: I64, instruction: Str, shape_index: Str,
        is_phi: Bool, color: I32, offset: I64, size: I64, shape: Str, line: I64,
    }
    values: Values {
        file_id: I32, value_id: I64, instruction: Str, shape_index: Str, is_phi: Bool, color: I32,
        positions: StructList<PositionItems>, uses: StructList<UseItems>, uses_initialized: Bool,
        defining_instruction: Str, defining_opcode: OptStr, defining_op_name: OptStr, line: I64,
    }
    schedule: Schedule { file_id: I32, position: I32, instruction: Str, line: I64 }
    live_ranges: LiveRanges {
        file_id: I32, buffer: Str, instruction: Str, shape_index: Str, start: I32, end: I32,
        line: I64,
    }
    peak: Peak {
        file_id: I32, time: I32, buffer: Str, instruction: Str, shape_index: Str, bytes: I64,
        cumulative_bytes: I64, cumulative_is_printed: Bool, line: I64,
    }
    peak_breakdown: PeakBreakdown {
        file_id: I32, row: I32, parent_row: OptI32, depth: I32, label: Str, percent: F64,
        total_bytes: I64, current_bytes: I64, remaining_bytes: I64, line: I64,
    }
    memory_report: MemoryReport {
        file_id: I32, memory_space: OptStr, color: OptI32, table: I32, allocation: OptI64,
        cumulative_bytes: OptI64, percent: OptI32, size: I64, offset: OptI64,
        used_by_n_values: OptI32, shapes: OptStr, row_kind: Text, remaining_bytes: OptI64,
        flags: OptStr, line: I64,
    }
    totals: Totals {
        file_id: I32, section: Text, key: Text, color: OptI32, value: I64, line: I64,
    }
    modules: Modules {
        file_id: I32, name: Str, is_scheduled: Bool, entry_computation_layout: OptStr,
        attributes: Str, line: I64,
    }
    computations: Computations {
        file_id: I32, computation_id: I32, name: Str, is_entry: Bool, signature: Str,
        result_shape: Str, execution_thread: OptStr, line: I64,
    }
    instructions: Instructions {
        file_id: I32, computation_id: I32, instruction_id: I32, name: Str, is_root: Bool,
        opcode: Str, shape: Str, operands: StrList, operand_text: Str, called_computations: StrList,
        attributes: Str, op_name: OptStr, op_type: OptStr, source_file: OptStr,
        source_line: OptI64, source_function: OptStr, stack_frame_id: OptI64,
        custom_call_target: OptStr, backend_config: OptStr, fusion_kind: OptStr,
        sharding: OptStr, line: I64, offset: I64,
    }
    stack_frames: StackFrames {
        file_id: I32, frame_id: I64, parent_frame_id: OptI64, file_location_id: I64,
        file_name: OptStr, function_name: OptStr, source_line: OptI64, end_line: OptI64,
        column: OptI64, end_column: OptI64, line: I64,
    }
    custom_calls: CustomCalls {
        file_id: I32, instruction_id: I32, name: Str, target: Str, body_length: I64,
        decoded_length: OptI64, format: Text, kernel_name: OptStr,
    }
    thunks: Thunks {
        file_id: I32, thunk_id: I32, parent_thunk_id: OptI32, depth: I32, kind: OptStr,
        section: OptStr, annotation: Str, line: I64,
    }
    oom_reports: OomReports {
        file_id: I32, report_id: I32, backend: Text, memory_space: OptStr, section: Text,
        key: Text, bytes: OptI64, value: Str, line: I64,
    }
    oom_buffers: OomBuffers {
        file_id: I32, report_id: I32, rank: I32, size_bytes: I64, size: Str,
        operator: OptStr, op_type: OptStr, op_name: OptStr, source_file: OptStr,
        source_line: OptI64, shape: OptStr, unpadded_size_bytes: OptI64, padding_bytes: OptI64,
        padding: OptStr, xla_label: OptStr, allocation_type: OptStr,
        entry_parameter_subshape: OptStr, line: I64,
    }
    errors: Errors { file_id: I32, line: I64, column: I64, message: Text, text: Text }
}

/// Columns a line shift applies to: only `I64` columns named `line` are ever shifted (see
/// `Tables::shift_lines`); every other column type ignores it.
pub trait ShiftLine {
    fn shift(&mut self, _by: i64) {}
}

impl ShiftLine for I64 {
    fn shift(&mut self, by: i64) {
        self.0.iter_mut().for_each(|v| *v += by);
    }
}

macro_rules! no_shift {
    ($($t:ty),*) => { $(impl ShiftLine for $t {})* };
}
no_shift!(I32, OptI32, OptI64, Str, Text, OptText, F64, Bool, StrList, ViewCol);
impl<C> ShiftLine for StructList<C> {}

/// Items of `values.positions`: `struct<instruction, shape_index>`.
#[derive(Default)]
pub struct PositionItems {
    pub instruction: Str,
    pub shape_index: Str,
}

impl StructItems for PositionItems {
    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("instruction", <Str as Column>::data_type(), false),
            Field::new("shape_index", <Str as Column>::data_type(), false),
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
    pub shape_index: Str,
}

impl StructItems for UseItems {
    fn fields() -> Fields {
        Fields::from(vec![
            Field::new("instruction", <Str as Column>::data_type(), false),
            Field::new("operand", <I32 as Column>::data_type(), false),
            Field::new("shape_index", <Str as Column>::data_type(), false),
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
