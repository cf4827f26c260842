//! A schema-driven reader and writer of Kafka message bodies: the field descriptions of
//! [`super::schemas`] and one generic walk over them, in the classic (int16 string lengths,
//! int32 array lengths) and the flexible encodings (compact lengths, tagged fields after
//! every struct). A body is read at one version into a [`Record`] and written at another;
//! that is the whole translation between a version `kafka-protocol` knows and a newer one.

use bytes::BufMut;
use uuid::Uuid;

/// The inclusive range of versions a field (or a nullability, or a tag) applies to; `NONE` is
/// empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub min: i16,
    pub max: i16,
}

impl Versions {
    pub const NONE: Versions = Versions { min: 1, max: 0 };
    /// `"N+"` in Kafka's schema notation.
    pub const fn from(min: i16) -> Versions {
        Versions { min, max: i16::MAX }
    }
    /// `"N-M"` in Kafka's schema notation.
    pub const fn range(min: i16, max: i16) -> Versions {
        Versions { min, max }
    }
    pub fn contains(&self, v: i16) -> bool {
        self.min <= v && v <= self.max
    }
}

/// A field's type, as the schemas name them.
#[derive(Debug, Clone, Copy)]
pub enum Type {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Int64,
    Float64,
    Uuid,
    String,
    Bytes,
    /// `[]T`.
    Array(&'static Type),
    /// A nested struct (the element type of `[]SomeStruct`, or a struct field).
    Struct(&'static [Field]),
}

/// What a field holds when a version lacks it or a writer was not given it (the schema's
/// `"default"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Default {
    /// 0, false, "", an empty array or bytes, the zero uuid.
    Zero,
    /// null.
    Null,
    Int(i64),
    Bool(bool),
}

/// One field of a message schema.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub ty: Type,
    pub versions: Versions,
    pub nullable: Versions,
    /// The tag and the versions in which the field is tagged (written in the tag buffer).
    pub tag: Option<(i32, Versions)>,
    pub default: Default,
}

impl Field {
    /// A field present in `versions`, not nullable, not tagged, zero by default.
    pub const fn new(name: &'static str, ty: Type, versions: Versions) -> Field {
        Field {
            name,
            ty,
            versions,
            nullable: Versions::NONE,
            tag: None,
            default: Default::Zero,
        }
    }
    pub const fn nullable(mut self, versions: Versions) -> Field {
        self.nullable = versions;
        self
    }
    pub const fn tagged(mut self, tag: i32, versions: Versions) -> Field {
        self.tag = Some((tag, versions));
        self
    }
    pub const fn default(mut self, default: Default) -> Field {
        self.default = default;
        self
    }
    fn tag_at(&self, version: i16) -> Option<i32> {
        self.tag
            .filter(|(_, tv)| tv.contains(version))
            .map(|(t, _)| t)
    }
}

/// A message body's schema: its name (for errors), flexible versions and top-level fields.
#[derive(Debug)]
pub struct Message {
    pub name: &'static str,
    pub flexible: Versions,
    pub fields: &'static [Field],
}

/// A decoded field value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    /// Every integer type (int8 to int64, uint16).
    Int(i64),
    Float(f64),
    Uuid(Uuid),
    Str(Option<String>),
    Bytes(Option<Vec<u8>>),
    Array(Option<Vec<Value>>),
    Struct(Record),
    /// A null struct (a nullable struct field, written as the marker -1).
    Null,
}

impl Value {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Value::Uuid(u) => Some(*u),
            _ => None,
        }
    }
    /// The string, `None` for null (or another type).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => s.as_deref(),
            _ => None,
        }
    }
    pub fn as_record(&self) -> Option<&Record> {
        match self {
            Value::Struct(r) => Some(r),
            _ => None,
        }
    }
    /// The elements of an array (none for null or another type).
    pub fn items(&self) -> &[Value] {
        match self {
            Value::Array(Some(v)) => v,
            _ => &[],
        }
    }
    /// An array of structs.
    pub fn records(records: impl IntoIterator<Item = Record>) -> Value {
        Value::Array(Some(records.into_iter().map(Value::Struct).collect()))
    }
    /// A nullable string.
    pub fn string(s: Option<impl Into<String>>) -> Value {
        Value::Str(s.map(Into::into))
    }

    /// An array of integers.
    pub fn ints<T: Into<i64> + Copy>(items: impl IntoIterator<Item = T>) -> Value {
        Value::Array(Some(
            items.into_iter().map(|i| Value::Int(i.into())).collect(),
        ))
    }
    /// An array of strings.
    pub fn strs<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
        Value::Array(Some(
            items
                .into_iter()
                .map(|s| Value::Str(Some(s.as_ref().to_string())))
                .collect(),
        ))
    }
    /// A nullable struct: [`Value::Null`] or the record.
    pub fn nullable_struct(record: Option<Record>) -> Value {
        record.map_or(Value::Null, Value::Struct)
    }

    fn default_of(field: &Field) -> Value {
        match field.default {
            Default::Null => match field.ty {
                Type::String => Value::Str(None),
                Type::Bytes => Value::Bytes(None),
                Type::Struct(_) => Value::Null,
                _ => Value::Array(None),
            },
            Default::Int(i) => Value::Int(i),
            Default::Bool(b) => Value::Bool(b),
            Default::Zero => match field.ty {
                Type::Bool => Value::Bool(false),
                Type::Int8 | Type::Int16 | Type::Uint16 | Type::Int32 | Type::Int64 => {
                    Value::Int(0)
                }
                Type::Float64 => Value::Float(0.0),
                Type::Uuid => Value::Uuid(Uuid::nil()),
                Type::String => Value::Str(Some(String::new())),
                Type::Bytes => Value::Bytes(Some(Vec::new())),
                Type::Array(_) => Value::Array(Some(Vec::new())),
                Type::Struct(fields) => Value::Struct(Record {
                    fields: fields
                        .iter()
                        .map(|f| (f.name, Value::default_of(f)))
                        .collect(),
                    unknown_tags: Vec::new(),
                }),
            },
        }
    }
}

/// A decoded struct: its fields by name (those of the version it was read at, or given by a
/// handler), and the tagged fields its schema does not know, kept as bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    pub fields: Vec<(&'static str, Value)>,
    pub unknown_tags: Vec<(i32, Vec<u8>)>,
}

impl Record {
    pub fn new() -> Record {
        Record::default()
    }
    /// `self` with `name` set to `value`.
    pub fn with(mut self, name: &'static str, value: Value) -> Record {
        self.set(name, value);
        self
    }
    pub fn set(&mut self, name: &'static str, value: Value) {
        match self.fields.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((name, value)),
        }
    }
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
    /// The elements of the array field `name` (none when absent or null).
    pub fn items(&self, name: &str) -> &[Value] {
        self.get(name).map_or(&[], Value::items)
    }
    /// The record at `index` of the array of structs `name`, if there is one.
    pub fn item(&self, name: &str, index: usize) -> Option<&Record> {
        self.items(name).get(index).and_then(Value::as_record)
    }
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.unknown_tags.is_empty()
    }

    // Typed getters, for structs built from a record [`read`] gave: a field the version
    // lacks (or a tagged field the body left out) reads as `default`.

    /// The integer field `name`, `default` when absent.
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.get(name).and_then(Value::as_i64).unwrap_or(default)
    }
    /// The bool field `name`, `default` when absent.
    pub fn bool(&self, name: &str, default: bool) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(default)
    }
    /// The nullable string `name`: `None` when null or absent.
    pub fn opt_string(&self, name: &str) -> Option<String> {
        self.get(name).and_then(Value::as_str).map(str::to_string)
    }
    /// The string `name`, "" when null or absent.
    pub fn string(&self, name: &str) -> String {
        self.opt_string(name).unwrap_or_default()
    }
    /// The array of strings `name` (empty when null or absent).
    pub fn strings(&self, name: &str) -> Vec<String> {
        self.items(name)
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }
    /// The array of integers `name` (empty when null or absent).
    pub fn ints(&self, name: &str) -> Vec<i64> {
        self.items(name).iter().filter_map(Value::as_i64).collect()
    }
    /// The nullable array `name`: `None` when null or absent, else its elements.
    pub fn opt_items(&self, name: &str) -> Option<&[Value]> {
        match self.get(name) {
            Some(Value::Array(Some(items))) => Some(items),
            _ => None,
        }
    }
    /// The array of structs `name`, each mapped by `f` (empty when null or absent).
    pub fn structs<T>(&self, name: &str, f: impl Fn(&Record) -> T) -> Vec<T> {
        self.items(name)
            .iter()
            .filter_map(Value::as_record)
            .map(f)
            .collect()
    }
    /// The nullable array of structs `name`, each mapped by `f`.
    pub fn opt_structs<T>(&self, name: &str, f: impl Fn(&Record) -> T) -> Option<Vec<T>> {
        self.opt_items(name)
            .map(|items| items.iter().filter_map(Value::as_record).map(f).collect())
    }
    /// The struct field `name`; `None` when null or absent.
    pub fn record(&self, name: &str) -> Option<&Record> {
        self.get(name).and_then(Value::as_record)
    }

    /// Sets the fields of `added` in `self`; an array of structs in both is merged element by
    /// element (so a handler gives only the fields a version adds, at their positions).
    pub fn merge(&mut self, added: &Record) {
        for (name, value) in &added.fields {
            match (self.fields.iter_mut().find(|(n, _)| n == name), value) {
                (Some((_, Value::Array(Some(mine)))), Value::Array(Some(theirs)))
                    if theirs.iter().all(|v| matches!(v, Value::Struct(_))) =>
                {
                    for (m, t) in mine.iter_mut().zip(theirs) {
                        if let (Value::Struct(m), Value::Struct(t)) = (m, t) {
                            m.merge(t);
                        }
                    }
                }
                (Some((_, Value::Struct(mine))), Value::Struct(theirs)) => mine.merge(theirs),
                _ => self.set(name, value.clone()),
            }
        }
    }
}

/// Why a body could not be read or written by its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("{message} v{version}: body ends inside {field}")]
    Truncated {
        message: &'static str,
        version: i16,
        field: &'static str,
    },
    #[error("{message} v{version}: invalid {field}: {reason}")]
    Invalid {
        message: &'static str,
        version: i16,
        field: &'static str,
        reason: String,
    },
}

/// The most elements an array or bytes a string may claim: more than a frame can hold is a
/// lie (an allocation bomb), refused before allocating.
fn claimed_len(n: i64, remaining: usize) -> Option<usize> {
    (n >= 0 && n as u64 <= remaining as u64).then_some(n as usize)
}

struct Reader<'a> {
    buf: &'a [u8],
    message: &'static str,
    version: i16,
    flexible: bool,
}

impl<'a> Reader<'a> {
    fn truncated(&self, field: &'static str) -> CodecError {
        CodecError::Truncated {
            message: self.message,
            version: self.version,
            field,
        }
    }
    fn invalid(&self, field: &'static str, reason: impl Into<String>) -> CodecError {
        CodecError::Invalid {
            message: self.message,
            version: self.version,
            field,
            reason: reason.into(),
        }
    }
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], CodecError> {
        if self.buf.len() < n {
            return Err(self.truncated(field));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], CodecError> {
        Ok(self.take(N, field)?.try_into().expect("N bytes"))
    }
    fn uvarint(&mut self, field: &'static str) -> Result<u64, CodecError> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let [b] = self.fixed::<1>(field)?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.invalid(field, "varint longer than 5 bytes"))
    }
    /// A length: compact (uvarint, 0 for null) when flexible, else int16 or int32 (-1 null).
    /// `None` is null.
    fn length(&mut self, field: &'static str, wide: bool) -> Result<Option<usize>, CodecError> {
        let n: i64 = if self.flexible {
            self.uvarint(field)? as i64 - 1
        } else if wide {
            i32::from_be_bytes(self.fixed(field)?) as i64
        } else {
            i16::from_be_bytes(self.fixed(field)?) as i64
        };
        if n == -1 {
            return Ok(None);
        }
        claimed_len(n, self.buf.len()).map(Some).ok_or_else(|| {
            self.invalid(
                field,
                format!("length {n} with {} bytes left", self.buf.len()),
            )
        })
    }

    fn value(&mut self, f: &Field, ty: &Type) -> Result<Value, CodecError> {
        let name = f.name;
        let nullable = f.nullable.contains(self.version);
        Ok(match ty {
            Type::Bool => Value::Bool(self.fixed::<1>(name)?[0] != 0),
            Type::Int8 => Value::Int(self.fixed::<1>(name)?[0] as i8 as i64),
            Type::Int16 => Value::Int(i16::from_be_bytes(self.fixed(name)?) as i64),
            Type::Uint16 => Value::Int(u16::from_be_bytes(self.fixed(name)?) as i64),
            Type::Int32 => Value::Int(i32::from_be_bytes(self.fixed(name)?) as i64),
            Type::Int64 => Value::Int(i64::from_be_bytes(self.fixed(name)?)),
            Type::Float64 => Value::Float(f64::from_be_bytes(self.fixed(name)?)),
            Type::Uuid => Value::Uuid(Uuid::from_bytes(self.fixed(name)?)),
            Type::String => match self.length(name, false)? {
                None if nullable => Value::Str(None),
                None => return Err(self.invalid(name, "null in a non-nullable string")),
                // Kafka's readers refuse longer strings, and its writers cannot write them.
                Some(n) if n > i16::MAX as usize => {
                    return Err(self.invalid(name, format!("string of {n} bytes")))
                }
                Some(n) => {
                    let bytes = self.take(n, name)?;
                    let s = std::str::from_utf8(bytes)
                        .map_err(|e| self.invalid(name, e.to_string()))?;
                    Value::Str(Some(s.to_string()))
                }
            },
            Type::Bytes => match self.length(name, true)? {
                None if nullable => Value::Bytes(None),
                None => return Err(self.invalid(name, "null in non-nullable bytes")),
                Some(n) => Value::Bytes(Some(self.take(n, name)?.to_vec())),
            },
            Type::Array(elem) => match self.length(name, true)? {
                None if nullable => Value::Array(None),
                None => return Err(self.invalid(name, "null in a non-nullable array")),
                Some(n) => {
                    // Elements are never null (and a struct element has no marker).
                    let item = Field {
                        nullable: Versions::NONE,
                        ..*f
                    };
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.value(&item, elem)?);
                    }
                    Value::Array(Some(items))
                }
            },
            // A nullable struct starts with a marker: -1 null, 1 present.
            Type::Struct(_) if nullable && (self.fixed::<1>(name)?[0] as i8) < 0 => Value::Null,
            Type::Struct(fields) => Value::Struct(self.record(fields)?),
        })
    }

    fn record(&mut self, fields: &'static [Field]) -> Result<Record, CodecError> {
        let v = self.version;
        let mut record = Record::new();
        for f in fields {
            if f.versions.contains(v) && f.tag_at(v).is_none() {
                let value = self.value(f, &f.ty)?;
                record.fields.push((f.name, value));
            }
        }
        if self.flexible {
            let count = self.uvarint("tagged fields")?;
            let mut last: i64 = -1;
            for _ in 0..count {
                let tag = self.uvarint("tagged fields")? as i64;
                if tag <= last {
                    return Err(self.invalid("tagged fields", "tags out of order"));
                }
                last = tag;
                let size = self.uvarint("tagged fields")? as usize;
                let bytes = self.take(size, "tagged fields")?;
                match fields
                    .iter()
                    .find(|f| f.versions.contains(v) && f.tag_at(v) == Some(tag as i32))
                {
                    Some(f) => {
                        let mut inner = Reader {
                            buf: bytes,
                            message: self.message,
                            version: v,
                            flexible: true,
                        };
                        let value = inner.value(f, &f.ty)?;
                        record.fields.push((f.name, value));
                    }
                    None => record.unknown_tags.push((tag as i32, bytes.to_vec())),
                }
            }
        }
        Ok(record)
    }
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
    message: &'static str,
    version: i16,
    flexible: bool,
}

fn put_uvarint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.put_u8((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.put_u8(n as u8);
}

impl Writer<'_> {
    fn invalid(&self, field: &'static str, reason: impl Into<String>) -> CodecError {
        CodecError::Invalid {
            message: self.message,
            version: self.version,
            field,
            reason: reason.into(),
        }
    }
    fn length(&mut self, n: Option<usize>, wide: bool) {
        match (self.flexible, n) {
            (true, n) => put_uvarint(self.out, n.map_or(0, |n| n as u64 + 1)),
            (false, n) if wide => self.out.put_i32(n.map_or(-1, |n| n as i32)),
            (false, n) => self.out.put_i16(n.map_or(-1, |n| n as i16)),
        }
    }
    fn int(&self, f: &Field, value: &Value) -> Result<i64, CodecError> {
        value
            .as_i64()
            .ok_or_else(|| self.invalid(f.name, format!("expected an integer, got {value:?}")))
    }

    fn value(&mut self, f: &Field, ty: &Type, value: &Value) -> Result<(), CodecError> {
        let name = f.name;
        let nullable = f.nullable.contains(self.version);
        let null = matches!(
            value,
            Value::Str(None) | Value::Bytes(None) | Value::Array(None) | Value::Null
        );
        if null && !nullable {
            return Err(self.invalid(name, "null where this version does not allow it"));
        }
        match (ty, value) {
            (Type::Bool, Value::Bool(b)) => self.out.put_u8(*b as u8),
            (Type::Int8, v) => self.out.put_i8(self.int(f, v)? as i8),
            (Type::Int16, v) => self.out.put_i16(self.int(f, v)? as i16),
            (Type::Uint16, v) => self.out.put_u16(self.int(f, v)? as u16),
            (Type::Int32, v) => self.out.put_i32(self.int(f, v)? as i32),
            (Type::Int64, v) => self.out.put_i64(self.int(f, v)?),
            (Type::Float64, Value::Float(x)) => self.out.put_f64(*x),
            (Type::Uuid, Value::Uuid(u)) => self.out.put_slice(u.as_bytes()),
            (Type::String, Value::Str(s)) => {
                let len = s.as_ref().map(|s| s.len());
                if len.is_some_and(|n| n > i16::MAX as usize) {
                    return Err(self.invalid(name, "string longer than 32767 bytes"));
                }
                self.length(len, false);
                self.out.put_slice(s.as_deref().unwrap_or("").as_bytes());
            }
            (Type::Bytes, Value::Bytes(b)) => {
                self.length(b.as_ref().map(Vec::len), true);
                self.out.put_slice(b.as_deref().unwrap_or(&[]));
            }
            (Type::Array(elem), Value::Array(items)) => {
                self.length(items.as_ref().map(Vec::len), true);
                let element = Field {
                    nullable: Versions::NONE,
                    ..*f
                };
                for item in items.iter().flatten() {
                    self.value(&element, elem, item)?;
                }
            }
            (Type::Struct(_), Value::Null) => self.out.put_i8(-1),
            (Type::Struct(fields), Value::Struct(r)) => {
                if nullable {
                    self.out.put_i8(1);
                }
                self.record(fields, r)?
            }
            (ty, v) => return Err(self.invalid(name, format!("{v:?} is not a {ty:?}"))),
        }
        Ok(())
    }

    fn record(&mut self, fields: &'static [Field], record: &Record) -> Result<(), CodecError> {
        let v = self.version;
        let value_of = |f: &Field, defaults: &[Value], i: usize| -> Value {
            record
                .get(f.name)
                .cloned()
                .unwrap_or_else(|| defaults[i].clone())
        };
        let default_values: Vec<Value> = fields.iter().map(Value::default_of).collect();
        let mut tagged: Vec<(i32, Vec<u8>)> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            if !f.versions.contains(v) {
                continue;
            }
            let value = value_of(f, &default_values, i);
            match f.tag_at(v) {
                None => self.value(f, &f.ty, &value)?,
                // A tagged field is written only when it differs from its default.
                Some(tag) if value != default_values[i] => {
                    let mut bytes = Vec::new();
                    Writer {
                        out: &mut bytes,
                        message: self.message,
                        version: v,
                        flexible: true,
                    }
                    .value(f, &f.ty, &value)?;
                    tagged.push((tag, bytes));
                }
                Some(_) => {}
            }
        }
        if self.flexible {
            tagged.extend(record.unknown_tags.iter().cloned());
            tagged.sort_by_key(|(t, _)| *t);
            put_uvarint(self.out, tagged.len() as u64);
            for (tag, bytes) in tagged {
                put_uvarint(self.out, tag as u64);
                put_uvarint(self.out, bytes.len() as u64);
                self.out.put_slice(&bytes);
            }
        }
        Ok(())
    }
}

/// Reads a whole body of `message` at `version`; bytes after it are ignored, as Kafka
/// ignores them.
pub fn read(message: &Message, body: &[u8], version: i16) -> Result<Record, CodecError> {
    let mut r = Reader {
        buf: body,
        message: message.name,
        version,
        flexible: message.flexible.contains(version),
    };
    r.record(message.fields)
}

/// Writes `record` as a body of `message` at `version`: fields the record lacks take their
/// defaults, fields the version lacks are left out.
pub fn write(message: &Message, record: &Record, version: i16) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    Writer {
        out: &mut out,
        message: message.name,
        version,
        flexible: message.flexible.contains(version),
    }
    .record(message.fields, record)?;
    Ok(out)
}

/// The part of `record` (read at `from`) that a body at `to` cannot carry: the fields `to`
/// lacks, and, inside arrays and structs that both have, the same for each element (an
/// element keeps its index, so a handler finds what belongs to the n-th topic at the n-th
/// place).
pub fn dropped(message: &Message, record: &Record, from: i16, to: i16) -> Record {
    dropped_in(message.fields, record, from, to)
}

fn dropped_in(fields: &'static [Field], record: &Record, from: i16, to: i16) -> Record {
    let mut out = Record::new();
    for f in fields {
        let Some(value) = record.get(f.name) else {
            continue;
        };
        if !f.versions.contains(to) {
            if f.versions.contains(from) {
                out.fields.push((f.name, value.clone()));
            }
            continue;
        }
        let inner = match (f.ty, value) {
            (Type::Struct(sub), Value::Struct(r)) => {
                Some(Value::Struct(dropped_in(sub, r, from, to)))
            }
            (Type::Array(Type::Struct(sub)), Value::Array(Some(items))) if drops(sub, from, to) => {
                Some(Value::Array(Some(
                    items
                        .iter()
                        .map(|item| match item {
                            Value::Struct(r) => Value::Struct(dropped_in(sub, r, from, to)),
                            _ => Value::Struct(Record::new()),
                        })
                        .collect(),
                )))
            }
            _ => None,
        };
        match inner {
            Some(Value::Struct(r)) if r.is_empty() => {}
            Some(v) => out.fields.push((f.name, v)),
            None => {}
        }
    }
    out
}

/// Whether some field among `fields`, at any depth, is present at `from` and not at `to`.
fn drops(fields: &'static [Field], from: i16, to: i16) -> bool {
    fields.iter().any(|f| {
        (f.versions.contains(from) && !f.versions.contains(to))
            || match f.ty {
                Type::Struct(sub) => drops(sub, from, to),
                Type::Array(Type::Struct(sub)) => drops(sub, from, to),
                _ => false,
            }
    })
}

/// Re-encodes `body` from version `from` to version `to` of `message`: the fields `to` adds
/// take their values from `added` (by name and position; a field it does not name takes its
/// default), and the fields `to` lacks are returned beside the new body (see [`dropped`]).
pub fn translate(
    message: &Message,
    body: &[u8],
    from: i16,
    to: i16,
    added: Option<&Record>,
) -> Result<(Vec<u8>, Record), CodecError> {
    let mut record = read(message, body, from)?;
    let lost = dropped(message, &record, from, to);
    if let Some(added) = added {
        record.merge(added);
    }
    Ok((write(message, &record, to)?, lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    static INNER: [Field; 2] = [
        Field::new("A", Type::Int32, Versions::from(0)),
        Field::new("B", Type::String, Versions::from(1)).nullable(Versions::from(1)),
    ];
    static FIELDS: [Field; 4] = [
        Field::new("Name", Type::String, Versions::range(0, 1)),
        Field::new("Id", Type::Uuid, Versions::from(2)),
        Field::new(
            "Items",
            Type::Array(&Type::Struct(&INNER)),
            Versions::from(0),
        ),
        Field::new("Tags", Type::Array(&Type::Int32), Versions::from(1))
            .tagged(0, Versions::from(1))
            .nullable(Versions::from(1))
            .default(Default::Null),
    ];
    static MESSAGE: Message = Message {
        name: "Test",
        flexible: Versions::from(1),
        fields: &FIELDS,
    };

    #[test]
    fn classic_and_flexible_bodies_round_trip() {
        let record = Record::new().with("Name", Value::string(Some("t"))).with(
            "Items",
            Value::records([Record::new().with("A", Value::Int(7))]),
        );
        let v0 = write(&MESSAGE, &record, 0).unwrap();
        assert_eq!(v0, [0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 7]);
        assert_eq!(read(&MESSAGE, &v0, 0).unwrap(), record);
        let v1 = write(&MESSAGE, &record, 1).unwrap();
        // compact string, compact array, A, B (default ""), element tags, top-level tags
        assert_eq!(v1, [2, b't', 2, 0, 0, 0, 7, 1, 0, 0]);
    }

    #[test]
    fn tagged_fields_are_written_only_when_not_default_and_unknown_tags_are_kept() {
        let record = Record::new().with("Tags", Value::Array(Some(vec![Value::Int(5)])));
        let v1 = write(&MESSAGE, &record, 1).unwrap();
        // Name "", no items, one tag: 0, size 5, compact array of one int32
        assert_eq!(v1, [1, 1, 1, 0, 5, 2, 0, 0, 0, 5]);
        let back = read(&MESSAGE, &v1, 1).unwrap();
        assert_eq!(back.get("Tags"), record.get("Tags"));
        // A tag the schema does not know survives a read and a write.
        let unknown = [1, 1, 1, 9, 2, 0xab, 0xcd];
        let r = read(&MESSAGE, &unknown, 1).unwrap();
        assert_eq!(r.unknown_tags, vec![(9, vec![0xab, 0xcd])]);
        assert_eq!(write(&MESSAGE, &r, 1).unwrap(), unknown);
    }

    #[test]
    fn translation_returns_what_the_target_lacks_and_takes_what_it_adds() {
        let id = Uuid::from_u128(0x0102);
        let v2 = write(&MESSAGE, &Record::new().with("Id", Value::Uuid(id)), 2).unwrap();
        let (v1, lost) = translate(&MESSAGE, &v2, 2, 1, None).unwrap();
        assert_eq!(lost.get("Id"), Some(&Value::Uuid(id)));
        assert_eq!(
            read(&MESSAGE, &v1, 1).unwrap().get("Name"),
            Some(&Value::string(Some("")))
        );
        let (up, lost) = translate(&MESSAGE, &v1, 1, 2, Some(&lost)).unwrap();
        assert_eq!(up, v2);
        assert_eq!(lost.get("Name"), Some(&Value::string(Some(""))));
    }

    #[test]
    fn dropped_fields_keep_their_element_positions() {
        let items = Value::records([
            Record::new()
                .with("A", Value::Int(1))
                .with("B", Value::string(Some("x"))),
            Record::new()
                .with("A", Value::Int(2))
                .with("B", Value::string(None::<String>)),
        ]);
        let v1 = write(&MESSAGE, &Record::new().with("Items", items), 1).unwrap();
        let (_, lost) = translate(&MESSAGE, &v1, 1, 0, None).unwrap();
        assert_eq!(
            lost.item("Items", 0).unwrap().get("B"),
            Some(&Value::string(Some("x")))
        );
        assert_eq!(
            lost.item("Items", 1).unwrap().get("B"),
            Some(&Value::Str(None))
        );
        assert!(lost.item("Items", 0).unwrap().get("A").is_none());
    }

    #[test]
    fn a_nullable_struct_has_a_marker_and_array_elements_have_none() {
        static POINT: [Field; 1] = [Field::new("X", Type::Int16, Versions::from(0))];
        static NULLABLE: [Field; 2] = [
            Field::new("P", Type::Struct(&POINT), Versions::from(0))
                .nullable(Versions::from(0))
                .default(Default::Null),
            Field::new("Ps", Type::Array(&Type::Struct(&POINT)), Versions::from(0))
                .nullable(Versions::from(0))
                .default(Default::Null),
        ];
        static M: Message = Message {
            name: "Nullable",
            flexible: Versions::from(0),
            fields: &NULLABLE,
        };
        // null struct: marker -1; null array: 0; tags
        assert_eq!(write(&M, &Record::new(), 0).unwrap(), [0xff, 0, 0]);
        let point = Record::new().with("X", Value::Int(5));
        let record = Record::new()
            .with("P", Value::Struct(point.clone()))
            .with("Ps", Value::records([point]));
        let bytes = write(&M, &record, 0).unwrap();
        assert_eq!(bytes, [1, 0, 5, 0, 2, 0, 5, 0, 0]);
        assert_eq!(read(&M, &bytes, 0).unwrap(), record);
        assert_eq!(
            read(&M, &[0xff, 0, 0], 0).unwrap().get("P"),
            Some(&Value::Null)
        );
    }

    #[test]
    fn truncated_and_lying_bodies_are_errors_not_panics() {
        let record = Record::new()
            .with(
                "Items",
                Value::records([Record::new().with("A", Value::Int(1))]),
            )
            .with("Tags", Value::Array(Some(vec![Value::Int(1)])));
        let v1 = write(&MESSAGE, &record, 1).unwrap();
        for cut in 0..v1.len() {
            assert!(read(&MESSAGE, &v1[..cut], 1).is_err(), "cut at {cut}");
        }
        // An array claiming four billion elements in a few bytes.
        assert!(read(&MESSAGE, &[0, 0, 0xff, 0xff, 0xff, 0xfe], 0).is_err());
        // null where the version does not allow it
        assert!(read(&MESSAGE, &[0xff, 0xff, 0, 0, 0, 0], 0).is_err());
    }
}
