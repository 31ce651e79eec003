//! A small MessagePack decoder, enough for the AMDGPU metadata note: every format of the
//! MessagePack specification is read; malformed or truncated input is an error, never a
//! panic, and no length taken from the input is trusted for an allocation.

/// A decoded MessagePack value. Integers that are not negative are `UInt` whatever their
/// encoding; negative ones are `Int`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    /// A string; bytes that are not UTF-8 are replaced (U+FFFD).
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    /// Key/value pairs in the order of the input.
    Map(Vec<(Value, Value)>),
    /// An extension type: its type code and data.
    Ext(i8, Vec<u8>),
}

impl Value {
    /// The value of `key` in a map whose keys are strings; `None` for other values.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer that is not negative.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::UInt(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "a boolean",
            Value::UInt(_) | Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Bin(_) => "binary data",
            Value::Array(_) => "an array",
            Value::Map(_) => "a map",
            Value::Ext(..) => "an extension value",
        }
    }
}

/// Deepest nesting of arrays and maps accepted (the metadata needs 4).
pub const MAX_DEPTH: usize = 64;

/// Decodes the one value that `data` holds. Bytes after it must be zero (padding).
pub fn decode(data: &[u8]) -> Result<Value, String> {
    let (value, used) = decode_prefix(data)?;
    if let Some(at) = data[used..].iter().position(|&b| b != 0) {
        return Err(format!(
            "msgpack: unexpected data after the value at byte {}",
            used + at
        ));
    }
    Ok(value)
}

/// Decodes the value at the start of `data`; returns it and the number of bytes it took.
pub fn decode_prefix(data: &[u8]) -> Result<(Value, usize), String> {
    let mut reader = Reader { data, pos: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.pos))
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let left = self.data.len() - self.pos;
        if n > left {
            return Err(format!(
                "msgpack: truncated at byte {}: {n} bytes needed, {left} left",
                self.pos
            ));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn int(value: i64) -> Value {
        if value >= 0 {
            Value::UInt(value as u64)
        } else {
            Value::Int(value)
        }
    }

    fn string(&mut self, len: usize) -> Result<Value, String> {
        let bytes = self.take(len)?;
        Ok(Value::Str(String::from_utf8_lossy(bytes).into_owned()))
    }

    fn bin(&mut self, len: usize) -> Result<Value, String> {
        Ok(Value::Bin(self.take(len)?.to_vec()))
    }

    fn ext(&mut self, len: usize) -> Result<Value, String> {
        let kind = self.u8()? as i8;
        Ok(Value::Ext(kind, self.take(len)?.to_vec()))
    }

    /// Room for at most this many more elements: each takes at least one byte.
    fn capacity_for(&self, count: usize) -> usize {
        count.min(self.data.len() - self.pos)
    }

    fn seq(&mut self, count: usize, depth: usize) -> Result<Value, String> {
        let mut items = Vec::with_capacity(self.capacity_for(count));
        for _ in 0..count {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, count: usize, depth: usize) -> Result<Value, String> {
        let mut entries = Vec::with_capacity(self.capacity_for(count) / 2);
        for _ in 0..count {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "msgpack: nested deeper than {MAX_DEPTH} levels at byte {}",
                self.pos
            ));
        }
        let at = self.pos;
        let tag = self.u8()?;
        Ok(match tag {
            0x00..=0x7f => Value::UInt(u64::from(tag)),
            0x80..=0x8f => return self.map(usize::from(tag & 0x0f), depth),
            0x90..=0x9f => return self.seq(usize::from(tag & 0x0f), depth),
            0xa0..=0xbf => return self.string(usize::from(tag & 0x1f)),
            0xc0 => Value::Nil,
            0xc1 => return Err(format!("msgpack: the reserved byte 0xc1 at byte {at}")),
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4 => {
                let n = self.u8()?;
                return self.bin(usize::from(n));
            }
            0xc5 => {
                let n = self.u16()?;
                return self.bin(usize::from(n));
            }
            0xc6 => {
                let n = self.u32()?;
                return self.bin(n as usize);
            }
            0xc7 => {
                let n = self.u8()?;
                return self.ext(usize::from(n));
            }
            0xc8 => {
                let n = self.u16()?;
                return self.ext(usize::from(n));
            }
            0xc9 => {
                let n = self.u32()?;
                return self.ext(n as usize);
            }
            0xca => Value::Float(f64::from(f32::from_bits(self.u32()?))),
            0xcb => Value::Float(f64::from_bits(self.u64()?)),
            0xcc => Value::UInt(u64::from(self.u8()?)),
            0xcd => Value::UInt(u64::from(self.u16()?)),
            0xce => Value::UInt(u64::from(self.u32()?)),
            0xcf => Value::UInt(self.u64()?),
            0xd0 => Self::int(i64::from(self.u8()? as i8)),
            0xd1 => Self::int(i64::from(self.u16()? as i16)),
            0xd2 => Self::int(i64::from(self.u32()? as i32)),
            0xd3 => Self::int(self.u64()? as i64),
            0xd4 => return self.ext(1),
            0xd5 => return self.ext(2),
            0xd6 => return self.ext(4),
            0xd7 => return self.ext(8),
            0xd8 => return self.ext(16),
            0xd9 => {
                let n = self.u8()?;
                return self.string(usize::from(n));
            }
            0xda => {
                let n = self.u16()?;
                return self.string(usize::from(n));
            }
            0xdb => {
                let n = self.u32()?;
                return self.string(n as usize);
            }
            0xdc => {
                let n = self.u16()?;
                return self.seq(usize::from(n), depth);
            }
            0xdd => {
                let n = self.u32()?;
                return self.seq(n as usize, depth);
            }
            0xde => {
                let n = self.u16()?;
                return self.map(usize::from(n), depth);
            }
            0xdf => {
                let n = self.u32()?;
                return self.map(n as usize, depth);
            }
            0xe0..=0xff => Value::Int(i64::from(tag as i8)),
        })
    }
}
