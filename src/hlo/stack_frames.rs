//! The `FileNames` / `FunctionNames` / `FileLocations` / `StackFrames` tables at the top of
//! newer module files (FORMATS.md §3.4): rows kept to resolve `stack_frame_id=`, and the joined
//! `stack_frames` table.

use std::borrow::Cow;
use std::collections::HashMap;

use super::scan::{c_unescape, skip_string_in};
use crate::source::SourceRef;
use crate::tables::StackFrames;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    FileNames,
    FunctionNames,
    FileLocations,
    StackFrames,
}

impl Table {
    pub fn from_line(s: &[u8]) -> Option<Table> {
        Some(match s {
            b"FileNames" => Table::FileNames,
            b"FunctionNames" => Table::FunctionNames,
            b"FileLocations" => Table::FileLocations,
            b"StackFrames" => Table::StackFrames,
            _ => return None,
        })
    }

    pub fn name(t: Option<Table>) -> &'static str {
        match t {
            Some(Table::FileNames) => "FileNames",
            Some(Table::FunctionNames) => "FunctionNames",
            Some(Table::FileLocations) => "FileLocations",
            Some(Table::StackFrames) => "StackFrames",
            None => "no table",
        }
    }
}

/// One `FileLocations` row: file_name_id, function_name_id, line, end_line, column, end_column
/// (the last four checked to fit i32 when read: they are int32 columns).
pub type Location = [i64; 6];

#[derive(Default, Clone)]
pub struct Frames<'c> {
    pub file_names: IdMap<Cow<'c, [u8]>>,
    pub function_names: IdMap<Cow<'c, [u8]>>,
    pub locations: IdMap<Location>,
    /// frame id → file_location_id
    pub frames: IdMap<i64>,
}

/// Rows by id. Ids are small and dense (numbered from 1), and every instruction line looks
/// one up, so a vector beats hashing; huge or negative ids go to a map.
#[derive(Clone)]
pub struct IdMap<T> {
    dense: Vec<Option<T>>,
    sparse: HashMap<i64, T>,
}

impl<T> Default for IdMap<T> {
    fn default() -> Self {
        IdMap { dense: Vec::new(), sparse: HashMap::new() }
    }
}

const DENSE_LIMIT: i64 = 1 << 22;

impl<T> IdMap<T> {
    pub fn insert(&mut self, id: i64, v: T) {
        if (0..DENSE_LIMIT).contains(&id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(v);
        } else {
            self.sparse.insert(id, v);
        }
    }

    #[inline]
    pub fn get(&self, id: &i64) -> Option<&T> {
        if (0..DENSE_LIMIT).contains(id) {
            self.dense.get(*id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(id)
        }
    }
}

/// A small cursor over one table row (the rows have a fixed layout). Numbers follow ASCII byte
/// rules (`[0-9]+`, `-?[0-9]+` for the signed ones, leading zeros allowed); one that does not
/// fit its column (i64 ids, i32 source positions) is remembered in `range` (its first
/// character, and the limit it broke) and read as 0: the row is then an error there, once its
/// layout has matched.
struct Cur<'a> {
    s: &'a [u8],
    i: usize,
    range: Option<(usize, i64)>,
}

impl<'a> Cur<'a> {
    fn lit(&mut self, l: &[u8]) -> Option<()> {
        self.s[self.i..].starts_with(l).then(|| self.i += l.len())
    }
    fn int(&mut self, signed: bool) -> Option<i64> {
        let st = self.i;
        let neg = signed && self.s.get(self.i) == Some(&b'-');
        if neg {
            self.i += 1;
        }
        let d = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if self.i == d {
            return None;
        }
        Some(super::scan::digits_i64(neg, &self.s[d..self.i]).unwrap_or_else(|| {
            self.range.get_or_insert((st, i64::MAX));
            0
        }))
    }
    /// A signed number of an int32 column (`FileLocations` line and column numbers).
    fn int32(&mut self) -> Option<i64> {
        let st = self.i;
        let v = self.int(true)?;
        if i32::try_from(v).is_err() {
            self.range.get_or_insert((st, i32::MAX as i64));
            return Some(0);
        }
        Some(v)
    }
    fn end(&self) -> Option<()> {
        (self.i == self.s.len()).then_some(())
    }
}

/// Why a table row could not be read.
pub enum RowError {
    /// Not a row of that table (reported at column 1).
    Bad,
    /// A number that does not fit its column, at this byte offset; the most it may be.
    Range(usize, i64),
}

impl<'c> Frames<'c> {
    /// Read one row of `table`; pushes a `stack_frames` row for `StackFrames`. None: not a row
    /// of that table (the caller reports it).
    pub fn row(&mut self, table: Option<Table>, s: &'c [u8], line: u64, file_id: i32, src: &SourceRef, out: &mut StackFrames) -> Result<(), RowError> {
        let mut c = Cur { s, i: 0, range: None };
        match self.row_at(&mut c, table, s, line, file_id, src, out) {
            None => Err(RowError::Bad),
            Some(r) => r.map_err(|(at, limit)| RowError::Range(at, limit)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn row_at(&mut self, c: &mut Cur<'c>, table: Option<Table>, s: &'c [u8], line: u64, file_id: i32, src: &SourceRef, out: &mut StackFrames) -> Option<Result<(), (usize, i64)>> {
        let range = |c: &Cur| c.range.map_or(Ok(()), Err);
        match table? {
            t @ (Table::FileNames | Table::FunctionNames) => {
                let id = c.int(false)?;
                c.lit(b" ")?;
                if s.get(c.i) != Some(&b'"') || skip_string_in(s, c.i).ok()? != s.len() {
                    return None;
                }
                if let Err(at) = range(c) {
                    return Some(Err(at));
                }
                let v = c_unescape(&s[c.i + 1..s.len() - 1]);
                let map = if t == Table::FileNames { &mut self.file_names } else { &mut self.function_names };
                map.insert(id, v);
            }
            Table::FileLocations => {
                let id = c.int(false)?;
                let mut v = [0i64; 6];
                let keys: [&[u8]; 6] = [b" {file_name_id=", b" function_name_id=", b" line=", b" end_line=", b" column=", b" end_column="];
                for (k, key) in keys.iter().enumerate() {
                    c.lit(key)?;
                    v[k] = if k >= 2 { c.int32()? } else { c.int(false)? };
                }
                c.lit(b"}")?;
                c.end()?;
                if let Err(at) = range(c) {
                    return Some(Err(at));
                }
                self.locations.insert(id, v);
            }
            Table::StackFrames => {
                let frame = c.int(false)?;
                c.lit(b" {file_location_id=")?;
                let loc = c.int(false)?;
                c.lit(b" parent_frame_id=")?;
                let parent = c.int(false)?;
                c.lit(b"}")?;
                c.end()?;
                if let Err(at) = range(c) {
                    return Some(Err(at));
                }
                self.frames.insert(frame, loc);
                let fl = self.locations.get(&loc);
                out.file_id.push(file_id);
                out.frame_id.push(frame);
                out.parent_frame_id.push(if parent == 1 { None } else { Some(parent - 1) });
                out.file_location_id.push(loc);
                out.file_name.push_opt(src, fl.and_then(|l| self.file_names.get(&l[0])).map(|s| &s[..]));
                out.function_name.push_opt(src, fl.and_then(|l| self.function_names.get(&l[1])).map(|s| &s[..]));
                // (checked to fit when the location was read: `Cur::int32`)
                out.source_line.push(fl.map(|l| l[2] as i32));
                out.end_line.push(fl.map(|l| l[3] as i32));
                out.column.push(fl.map(|l| l[4] as i32));
                out.end_column.push(fl.map(|l| l[5] as i32));
                out.line.push(line as i32);
            }
        }
        Some(Ok(()))
    }

    /// (source_file, source_function, source_line) of a `stack_frame_id`, when the tables know
    /// the frame and its location (then they win over metadata).
    pub fn resolve(&self, frame: i32) -> Option<(Option<&[u8]>, Option<&[u8]>, i32)> {
        let loc = self.locations.get(self.frames.get(&i64::from(frame))?)?;
        Some((self.file_names.get(&loc[0]).map(|s| &s[..]), self.function_names.get(&loc[1]).map(|s| &s[..]), loc[2] as i32))
    }
}
