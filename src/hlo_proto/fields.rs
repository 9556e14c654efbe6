//! What the schema (`schema.rs`, generated) says of a field: its number, name, kind and
//! whether it repeats. Below both the schema and the decoder (`wire.rs`), which reads by it.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    U64,
    I64,
    I32,
    Bool,
    Str,
    /// A string the text prints bare (a name, an opcode, an enum word): `[A-Za-z0-9_.-]+`, else
    /// an error (a string is a value, never syntax).
    Name,
    Bytes,
    F32,
    F64,
    /// A message, by its index in `schema::MESSAGES`.
    Msg(usize),
}

pub struct Field {
    pub number: u32,
    pub name: &'static str,
    pub kind: Kind,
    pub repeated: bool,
}
