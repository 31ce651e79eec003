//! The host's half of device `printf`: LLVM 22's RPC server formats on the host what its GPU
//! libc's `printf` sends, with LLVM libc's own `printf_core` parser and converters built with
//! `LIBC_COPT_PRINTF_DISABLE_WRITE_INT`, `LIBC_COPT_PRINTF_DISABLE_INDEX_MODE` and
//! `LIBC_COPT_PRINTF_DISABLE_STRERROR`, and a `long double` of 8 bytes. The output therefore
//! follows LLVM libc, not the host C library, where the two differ; each difference from glibc
//! is noted where it is made. Written here in our own words; the fuzzer's requests are
//! formatted by LLVM 22's `printf_core` as well and compared (fuzz/tests/printf_against_llvm.rs).
//!
//! Where LLVM 22's server does not do what it means to, we do: the `long double` of `%Lf` is
//! the GPU's 8 bytes (`rpc_server.h` declares so, but LLVM's x86-64 plugins, built without
//! `-mlong-double-64`, read 16 bytes at a 16-byte boundary, not what the device sent); `%lc`
//! writes the character in UTF-8 as LLVM libc does after its 22 release (LLVM 22 writes the
//! low byte alone); and widths and precisions near `INT_MAX`, where LLVM's converters overflow
//! an `int` (`%.2147483647A` crashes its formatting), are refused by the output limit.
//!
//! The device sends the format, is told how many bytes of arguments it reads
//! ([`argument_bytes`]), sends its variadic argument area as it lies in memory (each argument
//! at its natural alignment on NVPTX, back to back on AMDGPU: `packed`), then is asked for the
//! text of each non-null `%s` argument ([`string_arguments`]) before the host formats
//! ([`format`]). The device promotes as C's variadic calls do: `char` and `short` to `int`,
//! `float` to `double`; a `long double` is a `double` on the GPU.
//!
//! Rounding of `%f`, `%e`, `%g` and `%a` is to nearest, ties to even, the host's default mode
//! (LLVM reads the host's current rounding mode, which the plugin never changes).

use std::fmt;

/// The most bytes one call formats. LLVM counts output in an `int` and allocates the whole
/// of it; a width or precision from the device could ask for gigabytes, which we refuse
/// instead.
pub const MAX_OUTPUT: usize = 1 << 26;

/// Why a device `printf` was not formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// `%n`: writing the count back to the device is not supported. LLVM's server, built
    /// without it, copies "%n" through as text; we refuse it. `at`: its byte offset in the
    /// format.
    WriteCountRefused { at: usize },
    /// The format reads more argument bytes than the device sent.
    ArgumentsTooShort { needed: u64, available: u64 },
    /// `%lc` of a value that is not a character (`WEOF` or above U+10FFFF), which LLVM libc's
    /// converter reports as an error after its 22 release.
    InvalidWideCharacter { value: u32 },
    /// Fewer fetched strings than non-null `%s` arguments.
    MissingString { index: usize },
    /// The output would exceed `limit` bytes.
    OutputTooLong { limit: usize },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WriteCountRefused { at } => {
                write!(f, "the format asks to write the count of characters (%n at byte {at}), which is refused")
            }
            Self::ArgumentsTooShort { needed, available } => write!(
                f,
                "the format reads {needed} bytes of arguments but the device sent {available}"
            ),
            Self::InvalidWideCharacter { value } => {
                write!(f, "%lc of {value:#x}, which is not a character")
            }
            Self::MissingString { index } => {
                write!(
                    f,
                    "the text of string argument {index} was not fetched from the device"
                )
            }
            Self::OutputTooLong { limit } => {
                write!(f, "the formatted output would exceed {limit} bytes")
            }
        }
    }
}

impl std::error::Error for FormatError {}

/// Bytes of arguments `format` reads from the device's argument buffer (the first pass:
/// LLVM sends this count back to the client before the client sends the arguments).
pub fn argument_bytes(format: &[u8], packed: bool) -> u64 {
    let format = until_nul(format);
    let mut args = Arguments {
        buffer: None,
        offset: 0,
        packed,
    };
    let mut at = 0;
    while at < format.len() {
        // Counting never fails: there is no buffer to run out of.
        if next_piece(format, &mut at, &mut args).is_err() {
            break;
        }
    }
    args.offset
}

/// The device addresses of the `%s` arguments that are not null, in the order they appear
/// (the server then fetches each string from the client). Stops at an argument the buffer
/// is too short for; [`format`] reports that.
pub fn string_arguments(format: &[u8], args: &[u8], packed: bool) -> Vec<u64> {
    let format = until_nul(format);
    let mut arguments = Arguments {
        buffer: Some(args),
        offset: 0,
        packed,
    };
    let mut strings = Vec::new();
    let mut at = 0;
    while at < format.len() {
        match next_piece(format, &mut at, &mut arguments) {
            Ok(Piece::Conversion(spec)) if spec.conversion == b's' => {
                if let Value::Address(address) = spec.value {
                    if address != 0 {
                        strings.push(address);
                    }
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    strings
}

/// The formatted output. `strings`: the fetched text of each non-null `%s` argument in the
/// order [`string_arguments`] returned them (without the NUL). A null `%s` prints "(null)" as
/// LLVM's libc does. Errors: `%n` (refused, as LLVM's server is built), an argument buffer
/// shorter than the format reads, a malformed conversion LLVM reports as an error.
///
/// Strings are attributed by position: a null `%s` prints "(null)" and takes no fetched
/// string. LLVM's server instead hands the fetched strings out in order to every `%s`,
/// null ones included, so after a null `%s` it prints each later string one place early;
/// we deliberately do not copy that.
pub fn format(
    format: &[u8],
    args: &[u8],
    packed: bool,
    strings: &[Vec<u8>],
) -> Result<Vec<u8>, FormatError> {
    let format = until_nul(format);
    let mut arguments = Arguments {
        buffer: Some(args),
        offset: 0,
        packed,
    };
    let mut out = Output { bytes: Vec::new() };
    let mut next_string = 0;
    let mut at = 0;
    while at < format.len() {
        let start = at;
        match next_piece(format, &mut at, &mut arguments)? {
            Piece::Raw => out.put(&format[start..at])?,
            Piece::Conversion(spec) => {
                if spec.conversion == b'n' {
                    // LLVM's parser, built without `%n`, would pass "%n" through as text and
                    // read no argument; we refuse it instead, so device code relying on the
                    // count fails visibly.
                    return Err(FormatError::WriteCountRefused { at: start });
                }
                let text = if spec.conversion == b's' {
                    match spec.value {
                        Value::Address(0) => None,
                        _ => {
                            let text = strings
                                .get(next_string)
                                .ok_or(FormatError::MissingString { index: next_string })?;
                            next_string += 1;
                            Some(text.as_slice())
                        }
                    }
                } else {
                    None
                };
                convert(&mut out, &spec, text)?;
            }
        }
    }
    Ok(out.bytes)
}

/// The format up to its NUL, or all of it when the device sent none.
fn until_nul(format: &[u8]) -> &[u8] {
    match format.iter().position(|&b| b == 0) {
        Some(end) => &format[..end],
        None => format,
    }
}

// ---------------------------------------------------------------------------------------------
// Reading arguments.

/// The device's argument area, read as LLVM's `StructArgList` reads it (or, with no buffer,
/// counted as its `DummyArgList` counts): unpacked, each argument starts at a multiple of its
/// alignment; packed, right after the previous one.
struct Arguments<'a> {
    buffer: Option<&'a [u8]>,
    offset: u64,
    packed: bool,
}

impl Arguments<'_> {
    /// The next argument of `size` bytes (4 or 8) and alignment equal to its size, as a
    /// little-endian integer, zero-extended.
    fn next(&mut self, size: u64) -> Result<u64, FormatError> {
        if !self.packed {
            self.offset = self.offset.div_ceil(size) * size;
        }
        let start = self.offset;
        self.offset += size;
        let Some(buffer) = self.buffer else {
            return Ok(0);
        };
        let available = buffer.len() as u64;
        if self.offset > available {
            // LLVM returns -1 for an argument that starts past the end and reads past the end
            // for one that straddles it; both are a client out of step with the format.
            return Err(FormatError::ArgumentsTooShort {
                needed: self.offset,
                available,
            });
        }
        let mut bytes = [0u8; 8];
        let start = start as usize;
        bytes[..size as usize].copy_from_slice(&buffer[start..start + size as usize]);
        Ok(u64::from_le_bytes(bytes))
    }

    /// An `int` (a `*` width or precision).
    fn int(&mut self) -> Result<i32, FormatError> {
        Ok(self.next(4)? as u32 as i32)
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing.

const LEFT: u8 = 0x01;
const PLUS: u8 = 0x02;
const SPACE: u8 = 0x04;
const ALTERNATE: u8 = 0x08;
const ZEROES: u8 = 0x10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Length {
    None,
    Hh,
    H,
    L,
    Ll,
    J,
    Z,
    T,
    /// `L`: `long double` for floats (8 bytes here), `long long` for integers.
    BigL,
    /// `wN` and `wfN` (C23): the bit width is in `Spec::bit_width`.
    W,
}

#[derive(Debug, Clone, Copy)]
enum Value {
    None,
    /// Integers sign-extended from the type read, as LLVM widens them; doubles as their bits.
    Bits(u64),
    Address(u64),
}

#[derive(Debug, Clone, Copy)]
struct Spec {
    flags: u8,
    /// Never negative: a negative `*` width turns into `-`.
    width: i32,
    /// Negative: none given.
    precision: i32,
    length: Length,
    bit_width: u32,
    conversion: u8,
    value: Value,
}

enum Piece {
    /// Text to copy as it is: plain text, or a conversion LLVM does not know (with whatever
    /// `*` arguments it read).
    Raw,
    Conversion(Spec),
}

/// Digits at `*at`, as LLVM's `strtointeger<int>` reads them: all of them, saturating.
fn parse_number(format: &[u8], at: &mut usize) -> i32 {
    let mut value: i32 = 0;
    while let Some(&digit) = format.get(*at).filter(|b| b.is_ascii_digit()) {
        value = value
            .saturating_mul(10)
            .saturating_add(i32::from(digit - b'0'));
        *at += 1;
    }
    value
}

/// The next piece of `format` from `*at` (which it moves past the piece), reading the
/// arguments that piece takes, in the order LLVM's parser does: `*` width, `*` precision,
/// then the value.
fn next_piece(
    format: &[u8],
    at: &mut usize,
    args: &mut Arguments<'_>,
) -> Result<Piece, FormatError> {
    let byte = |i: usize| format.get(i).copied().unwrap_or(0);
    if byte(*at) != b'%' {
        while *at < format.len() && format[*at] != b'%' {
            *at += 1;
        }
        return Ok(Piece::Raw);
    }
    *at += 1;
    let mut flags = 0;
    loop {
        let flag = match byte(*at) {
            b'-' => LEFT,
            b'+' => PLUS,
            b' ' => SPACE,
            b'#' => ALTERNATE,
            b'0' => ZEROES,
            _ => break,
        };
        flags |= flag;
        *at += 1;
    }
    let mut width = 0;
    if byte(*at) == b'*' {
        *at += 1;
        width = args.int()?;
    } else if byte(*at).is_ascii_digit() {
        width = parse_number(format, at);
    }
    if width < 0 {
        width = if width == i32::MIN { i32::MAX } else { -width };
        flags |= LEFT;
    }
    let mut precision = -1;
    if byte(*at) == b'.' {
        *at += 1;
        precision = 0;
        if byte(*at) == b'*' {
            *at += 1;
            precision = args.int()?;
        } else if byte(*at).is_ascii_digit() {
            precision = parse_number(format, at);
        }
    }
    let mut bit_width = 0;
    let length = match byte(*at) {
        b'l' if byte(*at + 1) == b'l' => Length::Ll,
        b'l' => Length::L,
        b'h' if byte(*at + 1) == b'h' => Length::Hh,
        b'h' => Length::H,
        b'L' => Length::BigL,
        b'j' => Length::J,
        b'z' => Length::Z,
        b't' => Length::T,
        b'w' => Length::W,
        _ => Length::None,
    };
    match length {
        Length::None => {}
        Length::Ll | Length::Hh => *at += 2,
        Length::W => {
            *at += if byte(*at + 1) == b'f' { 2 } else { 1 };
            if byte(*at).is_ascii_digit() {
                bit_width = parse_number(format, at).max(0) as u32;
            }
        }
        _ => *at += 1,
    }
    let conversion = byte(*at);
    let signed = |bits: u64, size: u64| {
        if size == 4 {
            bits as u32 as i32 as i64 as u64
        } else {
            bits
        }
    };
    let value = match conversion {
        b'%' => Value::None,
        b'c' => Value::Bits(match length {
            // `wint_t`: unsigned.
            Length::L => args.next(4)?,
            _ => args.int()? as i64 as u64,
        }),
        b'd' | b'i' | b'o' | b'x' | b'X' | b'u' | b'b' | b'B' => {
            let size = match length {
                Length::None | Length::Hh | Length::H => 4,
                Length::W if bit_width == 0 => 0,
                Length::W if bit_width <= 32 => 4,
                _ => 8,
            };
            if size == 0 {
                // `%w0d` and `%wd`: not a conversion.
                step_past(format, at);
                return Ok(Piece::Raw);
            }
            Value::Bits(signed(args.next(size)?, size))
        }
        // `%Lf` reads a `long double`, which is 8 bytes, a `double`, here.
        b'f' | b'F' | b'e' | b'E' | b'a' | b'A' | b'g' | b'G' => Value::Bits(args.next(8)?),
        b'p' | b's' => Value::Address(args.next(8)?),
        // `%n`: LLVM's parser, built without it, treats it as unknown and reads no argument;
        // `format` refuses it.
        b'n' => Value::None,
        // Unknown, including `%m` and `%1$d` (LLVM's server has neither): copied as text.
        _ => {
            step_past(format, at);
            return Ok(Piece::Raw);
        }
    };
    *at += 1;
    Ok(Piece::Conversion(Spec {
        flags,
        width,
        precision,
        length,
        bit_width,
        conversion,
        value,
    }))
}

/// Past the conversion character, unless the format ended first.
fn step_past(format: &[u8], at: &mut usize) {
    if *at < format.len() {
        *at += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Output.

struct Output {
    bytes: Vec<u8>,
}

impl Output {
    fn room(&self, more: usize) -> Result<(), FormatError> {
        if more > MAX_OUTPUT - self.bytes.len() {
            return Err(FormatError::OutputTooLong { limit: MAX_OUTPUT });
        }
        Ok(())
    }

    fn put(&mut self, text: &[u8]) -> Result<(), FormatError> {
        self.room(text.len())?;
        self.bytes.extend_from_slice(text);
        Ok(())
    }

    /// `count` copies of `byte`; nothing when `count` is not positive.
    fn repeat(&mut self, byte: u8, count: i64) -> Result<(), FormatError> {
        if count <= 0 {
            return Ok(());
        }
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        self.room(count)?;
        self.bytes.resize(self.bytes.len() + count, byte);
        Ok(())
    }
}

fn convert(out: &mut Output, spec: &Spec, text: Option<&[u8]>) -> Result<(), FormatError> {
    let bits = match spec.value {
        Value::Bits(bits) | Value::Address(bits) => bits,
        Value::None => 0,
    };
    match spec.conversion {
        // Any flags, width or precision are ignored.
        b'%' => out.put(b"%"),
        b'c' => convert_char(out, spec, bits),
        b's' => {
            // A null `%s` prints "(null)" cut to the precision like any string: "%.3s" gives
            // "(nu". glibc prints nothing instead when the precision is under 6.
            let text = text.unwrap_or(b"(null)");
            let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
            // A wide `%ls` arrives as the bytes before its first zero byte (the client copies
            // every string with a byte `strlen`); LLVM libc after its 22 release then reads
            // those bytes as `wchar_t`s, past the copy. We print the bytes that came as they
            // are, as LLVM 22 does.
            pad_text(out, spec, &text[..end])
        }
        b'p' if bits == 0 => {
            // glibc prints "(nil)"; LLVM prints "(nullptr)", as a string: a precision cuts it.
            pad_text(out, spec, b"(nullptr)")
        }
        b'p' => {
            // As `%#tx` with the same width and precision: "0x" then hex digits, zero-padded
            // after the "0x" under `0`. glibc honours `+` and space for `%p`; LLVM does not.
            let as_hex = Spec {
                conversion: b'x',
                flags: spec.flags | ALTERNATE,
                length: Length::T,
                ..*spec
            };
            convert_int(out, &as_hex, bits)
        }
        b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => convert_float(out, spec, bits),
        _ => convert_int(out, spec, bits),
    }
}

/// Text padded with spaces to the width (never zeroes, whatever the flags), cut to the
/// precision first.
fn pad_text(out: &mut Output, spec: &Spec, text: &[u8]) -> Result<(), FormatError> {
    let length = match usize::try_from(spec.precision) {
        Ok(precision) => text.len().min(precision),
        Err(_) => text.len(),
    };
    let padding = i64::from(spec.width) - length as i64;
    if spec.flags & LEFT == 0 {
        out.repeat(b' ', padding)?;
    }
    out.put(&text[..length])?;
    if spec.flags & LEFT != 0 {
        out.repeat(b' ', padding)?;
    }
    Ok(())
}

fn convert_char(out: &mut Output, spec: &Spec, bits: u64) -> Result<(), FormatError> {
    let mut encoded = [0u8; 4];
    let length = if spec.length == Length::L {
        // `%lc`: the character in UTF-8, as LLVM libc after its 22 release writes it (its
        // `wcrtomb` is UTF-8 whatever the locale; it encodes surrogates too). glibc converts by the locale and fails in the C locale
        // for anything but ASCII.
        let value = bits as u32;
        utf8(value, &mut encoded).ok_or(FormatError::InvalidWideCharacter { value })?
    } else {
        encoded[0] = bits as u8;
        1
    };
    let no_precision = Spec {
        precision: -1,
        ..*spec
    };
    pad_text(out, &no_precision, &encoded[..length])
}

/// `value` in UTF-8 into `buffer`, its length; `None` above U+10FFFF (`WEOF` included).
fn utf8(value: u32, buffer: &mut [u8; 4]) -> Option<usize> {
    let length = match value {
        0..=0x7f => {
            buffer[0] = value as u8;
            return Some(1);
        }
        0x80..=0x7ff => 2,
        0x800..=0xffff => 3,
        0x1_0000..=0x10_ffff => 4,
        _ => return None,
    };
    let lead: u8 = [0, 0, 0xc0, 0xe0, 0xf0][length];
    for (i, slot) in buffer.iter_mut().enumerate().take(length) {
        let shift = 6 * (length - 1 - i);
        let bits = ((value >> shift) & 0x3f) as u8;
        *slot = if i == 0 {
            lead | (value >> shift) as u8
        } else {
            0x80 | bits
        };
    }
    Some(length)
}

/// The bits an integer conversion keeps of its (sign-extended) value.
fn length_mask(length: Length, bit_width: u32) -> u64 {
    match length {
        Length::None => u64::from(u32::MAX),
        Length::H => u64::from(u16::MAX),
        Length::Hh => u64::from(u8::MAX),
        Length::W if bit_width < 64 => (1u64 << bit_width) - 1,
        _ => u64::MAX,
    }
}

fn convert_int(out: &mut Output, spec: &Spec, bits: u64) -> Result<(), FormatError> {
    let conversion = spec.conversion;
    let mut flags = spec.flags;
    let mut number = bits;
    let mut negative = false;
    if matches!(conversion, b'd' | b'i') {
        // The sign is taken from the full value before the length modifier cuts it, so
        // "%hhd" of 255 prints "255" and of -129 prints "-129" where glibc prints "-1" and
        // "127" (the value converted to `signed char`). Values in range print alike.
        if number >> 63 == 1 {
            negative = true;
            number = number.wrapping_neg();
        }
    } else {
        flags &= !(PLUS | SPACE);
    }
    number &= length_mask(spec.length, spec.bit_width);

    let (radix, upper) = match conversion {
        b'x' => (16, false),
        b'X' => (16, true),
        b'o' => (8, false),
        b'b' | b'B' => (2, false),
        _ => (10, false),
    };
    let mut digits = [0u8; 64];
    let mut start = digits.len();
    let mut rest = number;
    loop {
        start -= 1;
        let digit = (rest % radix) as u8;
        digits[start] = match digit {
            0..=9 => b'0' + digit,
            _ if upper => b'A' + digit - 10,
            _ => b'a' + digit - 10,
        };
        rest /= radix;
        if rest == 0 {
            break;
        }
    }
    let digits = &digits[start..];

    let sign: &[u8] = if negative {
        b"-"
    } else if flags & PLUS != 0 {
        b"+"
    } else if flags & SPACE != 0 {
        b" "
    } else {
        b""
    };
    // "0x" and "0b" only for a non-zero value.
    let prefix: &[u8] = match conversion {
        b'x' if flags & ALTERNATE != 0 && number != 0 => b"0x",
        b'X' if flags & ALTERNATE != 0 && number != 0 => b"0X",
        b'b' if flags & ALTERNATE != 0 && number != 0 => b"0b",
        b'B' if flags & ALTERNATE != 0 && number != 0 => b"0B",
        _ => sign,
    };
    let width = i64::from(spec.width);
    let precision = i64::from(spec.precision);
    let mut digit_count = digits.len() as i64;
    let prefix_len = prefix.len() as i64;
    let (mut zeroes, mut spaces);
    if precision < 0 {
        if flags & (ZEROES | LEFT) == ZEROES {
            zeroes = width - digit_count - prefix_len;
            spaces = 0;
        } else {
            zeroes = 0;
            spaces = width - digit_count - prefix_len;
        }
    } else {
        if number == 0 && precision == 0 {
            digit_count = 0;
        }
        zeroes = (precision - digit_count).max(0);
        spaces = width - zeroes - digit_count - prefix_len;
    }
    // `#o` makes the first digit a zero if it is not one already.
    let leading_zero = zeroes > 0 || (number == 0 && digit_count != 0);
    if conversion == b'o' && spec.flags & ALTERNATE != 0 && !leading_zero {
        zeroes = 1;
        spaces -= 1;
    }
    let digits = if digit_count == 0 {
        &digits[..0]
    } else {
        digits
    };
    if flags & LEFT != 0 {
        out.put(prefix)?;
        out.repeat(b'0', zeroes)?;
        out.put(digits)?;
        out.repeat(b' ', spaces)?;
    } else {
        out.repeat(b' ', spaces)?;
        out.put(prefix)?;
        out.repeat(b'0', zeroes)?;
        out.put(digits)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Floating point.

fn convert_float(out: &mut Output, spec: &Spec, bits: u64) -> Result<(), FormatError> {
    let negative = bits >> 63 == 1;
    let sign: &[u8] = if negative {
        b"-"
    } else if spec.flags & PLUS != 0 {
        b"+"
    } else if spec.flags & SPACE != 0 {
        b" "
    } else {
        b""
    };
    let upper = spec.conversion.is_ascii_uppercase();
    let biased_exponent = (bits >> 52) & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    if biased_exponent == 0x7ff {
        // Infinity and NaN ("-nan" for a NaN with its sign bit set, as glibc), padded with
        // spaces only.
        let word: &[u8] = match (fraction == 0, upper) {
            (true, false) => b"inf",
            (true, true) => b"INF",
            (false, false) => b"nan",
            (false, true) => b"NAN",
        };
        let padding = i64::from(spec.width) - sign.len() as i64 - 3;
        if spec.flags & LEFT == 0 {
            out.repeat(b' ', padding)?;
        }
        out.put(sign)?;
        out.put(word)?;
        if spec.flags & LEFT != 0 {
            out.repeat(b' ', padding)?;
        }
        return Ok(());
    }
    let (mantissa, exponent) = if biased_exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, biased_exponent as i32 - 1075)
    };
    if matches!(spec.conversion, b'a' | b'A') {
        return convert_hex_float(out, spec, sign, mantissa, biased_exponent);
    }
    // The longest body is the integer part of the largest double (309 digits), a point and
    // the precision; refuse before building it.
    let precision = if spec.precision < 0 {
        6
    } else {
        spec.precision as usize
    };
    out.room(precision.saturating_add(320))?;
    let exact = ExactDecimal::of(mantissa, exponent);
    let alternate = spec.flags & ALTERNATE != 0;
    let body = match spec.conversion {
        b'f' | b'F' => fixed_body(&exact, precision, alternate),
        b'e' | b'E' => exponent_body(&exact, precision, alternate, upper),
        _ => general_body(&exact, spec.precision, alternate, upper),
    };
    pad_number(out, spec, sign, &[], &body)
}

/// Sign, prefix and body padded to the width: spaces before the sign, or with `0` zeroes
/// after the prefix, or with `-` spaces after all.
fn pad_number(
    out: &mut Output,
    spec: &Spec,
    sign: &[u8],
    prefix: &[u8],
    body: &[u8],
) -> Result<(), FormatError> {
    let padding = i64::from(spec.width) - (sign.len() + prefix.len() + body.len()) as i64;
    let left = spec.flags & LEFT != 0;
    let zeroes = spec.flags & ZEROES != 0;
    if !left && !zeroes {
        out.repeat(b' ', padding)?;
    }
    out.put(sign)?;
    out.put(prefix)?;
    if !left && zeroes {
        out.repeat(b'0', padding)?;
    }
    out.put(body)?;
    if left {
        out.repeat(b' ', padding)?;
    }
    Ok(())
}

/// The exact decimal value of a finite double: `digits` (0 to 9, most significant first, no
/// leading zero; empty for zero) times ten to `scale`. Every double has one, since 2^-k is
/// 5^k / 10^k.
struct ExactDecimal {
    digits: Vec<u8>,
    scale: i32,
}

impl ExactDecimal {
    fn of(mut mantissa: u64, mut exponent: i32) -> Self {
        if mantissa == 0 {
            return Self {
                digits: Vec::new(),
                scale: 0,
            };
        }
        let shift = mantissa.trailing_zeros();
        mantissa >>= shift;
        exponent += shift as i32;
        let mut number = vec![mantissa as u32, (mantissa >> 32) as u32];
        let scale = if exponent >= 0 {
            big_shift_left(&mut number, exponent as u32);
            0
        } else {
            // m * 2^-k = m * 5^k / 10^k.
            let mut k = exponent.unsigned_abs();
            while k > 0 {
                let step = k.min(13);
                big_multiply(&mut number, 5u32.pow(step));
                k -= step;
            }
            exponent
        };
        Self {
            digits: big_decimal(number),
            scale,
        }
    }

    /// The power of ten of the leading digit.
    fn leading_power(&self) -> i32 {
        self.digits.len() as i32 - 1 + self.scale
    }

    /// The digits of the value times 10^`shift`, rounded to an integer, ties to even;
    /// empty for zero.
    fn rounded(&self, shift: i64) -> Vec<u8> {
        let zeroes = i64::from(self.scale) + shift;
        if zeroes >= 0 {
            let mut digits = self.digits.clone();
            if !digits.is_empty() {
                digits.resize(digits.len() + zeroes as usize, 0);
            }
            return digits;
        }
        let dropped = zeroes.unsigned_abs() as usize;
        if dropped > self.digits.len() {
            return Vec::new();
        }
        let keep = self.digits.len() - dropped;
        let mut digits = self.digits[..keep].to_vec();
        let first = self.digits[keep];
        let more = self.digits[keep + 1..].iter().any(|&d| d != 0);
        let odd = digits.last().is_some_and(|d| d % 2 == 1);
        if first > 5 || (first == 5 && (more || odd)) {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, 1);
                    break;
                }
                i -= 1;
                if digits[i] == 9 {
                    digits[i] = 0;
                } else {
                    digits[i] += 1;
                    break;
                }
            }
        }
        digits
    }
}

/// `%f`: the integer part, a point (if there are decimals or `#`), `precision` decimals.
fn fixed_body(exact: &ExactDecimal, precision: usize, alternate: bool) -> Vec<u8> {
    let mut digits = exact.rounded(precision as i64);
    if digits.len() < precision + 1 {
        let missing = precision + 1 - digits.len();
        digits.splice(0..0, std::iter::repeat_n(0, missing));
    }
    let point = digits.len() - precision;
    let mut body: Vec<u8> = digits[..point].iter().map(|d| b'0' + d).collect();
    if precision > 0 || alternate {
        body.push(b'.');
    }
    body.extend(digits[point..].iter().map(|d| b'0' + d));
    body
}

/// The `precision + 1` significant digits of `%e` and the power of ten of the first.
fn significant(exact: &ExactDecimal, precision: usize) -> (Vec<u8>, i32) {
    if exact.digits.is_empty() {
        return (vec![0; precision + 1], 0);
    }
    let mut power = exact.leading_power();
    let mut digits = exact.rounded(precision as i64 - i64::from(power));
    if digits.len() > precision + 1 {
        // Rounded up to the next power of ten: 9.99 to 10.0.
        power += 1;
        digits.truncate(precision + 1);
    }
    (digits, power)
}

/// `%e`: one digit, a point (if there are decimals or `#`), the decimals, then the exponent
/// with a sign and at least two digits.
fn exponent_body(exact: &ExactDecimal, precision: usize, alternate: bool, upper: bool) -> Vec<u8> {
    let (digits, power) = significant(exact, precision);
    let mut body = vec![b'0' + digits[0]];
    if precision > 0 || alternate {
        body.push(b'.');
    }
    body.extend(digits[1..].iter().map(|d| b'0' + d));
    body.push(if upper { b'E' } else { b'e' });
    body.push(if power < 0 { b'-' } else { b'+' });
    let magnitude = power.unsigned_abs();
    if magnitude < 10 {
        body.push(b'0');
    }
    body.extend_from_slice(magnitude.to_string().as_bytes());
    body
}

/// `%g`: `%e` when the exponent X of the value rounded to P significant digits is below -4
/// or at least P, else `%f`; without `#`, trailing zeroes of the decimals (and a point left
/// alone) go.
fn general_body(exact: &ExactDecimal, precision: i32, alternate: bool, upper: bool) -> Vec<u8> {
    let significant_digits = match precision {
        p if p < 0 => 6,
        0 => 1,
        p => p as usize,
    };
    let (_, power) = significant(exact, significant_digits - 1);
    let power = i64::from(power);
    let mut body = if (-4..significant_digits as i64).contains(&power) {
        fixed_body(
            exact,
            (significant_digits as i64 - 1 - power) as usize,
            alternate,
        )
    } else {
        exponent_body(exact, significant_digits - 1, alternate, upper)
    };
    if !alternate {
        if let Some(point) = body.iter().position(|&b| b == b'.') {
            let exponent_at = body
                .iter()
                .position(|&b| b == b'e' || b == b'E')
                .unwrap_or(body.len());
            let mut end = exponent_at;
            while end > point + 1 && body[end - 1] == b'0' {
                end -= 1;
            }
            if end == point + 1 {
                end = point;
            }
            body.drain(end..exponent_at);
        }
    }
    body
}

/// `%a`: "0x", the leading hex digit (1, or 0 for zero and subnormals), the fraction's
/// digits (trailing zeroes dropped unless a precision is given, rounded to it, ties to
/// even), "p" and the binary exponent (-1022 for subnormals, 0 for zero).
fn convert_hex_float(
    out: &mut Output,
    spec: &Spec,
    sign: &[u8],
    mut mantissa: u64,
    biased_exponent: u64,
) -> Result<(), FormatError> {
    const DIGITS: usize = 14;
    let upper = spec.conversion == b'A';
    let mut exponent: i64 = match (mantissa, biased_exponent) {
        (0, _) => 0,
        (_, 0) => -1022,
        _ => biased_exponent as i64 - 1023,
    };
    let mut length = DIGITS;
    let precision = i64::from(spec.precision);
    if precision >= 0 && precision + 1 < DIGITS as i64 {
        let kept = precision as usize + 1;
        let shift = (DIGITS - kept) * 4;
        let dropped = mantissa & ((1 << shift) - 1);
        let half = 1u64 << (shift - 1);
        mantissa >>= shift;
        if dropped > half || (dropped == half && mantissa & 1 == 1) {
            mantissa += 1;
        }
        if mantissa >= 1 << (kept * 4) {
            mantissa >>= 4;
            exponent += 4;
        }
        length = kept;
    }
    let mut digits = [0u8; DIGITS];
    let mut last_non_zero = 1;
    for i in (0..length).rev() {
        let digit = (mantissa & 0xf) as u8;
        mantissa >>= 4;
        digits[i] = match digit {
            0..=9 => b'0' + digit,
            _ if upper => b'A' + digit - 10,
            _ => b'a' + digit - 10,
        };
        if digit != 0 && last_non_zero < i + 1 {
            last_non_zero = i + 1;
        }
    }
    let shown = if precision >= 0 {
        length
    } else {
        last_non_zero
    };
    let trailing_zeroes = (precision - (shown as i64 - 1)).max(0);
    let mut body = vec![digits[0]];
    if shown > 1 || spec.flags & ALTERNATE != 0 {
        body.push(b'.');
    }
    body.extend_from_slice(&digits[1..shown]);
    out.room(usize::try_from(trailing_zeroes).unwrap_or(usize::MAX))?;
    body.resize(body.len() + trailing_zeroes as usize, b'0');
    body.push(if upper { b'P' } else { b'p' });
    body.push(if exponent < 0 { b'-' } else { b'+' });
    body.extend_from_slice(exponent.unsigned_abs().to_string().as_bytes());
    pad_number(out, spec, sign, if upper { b"0X" } else { b"0x" }, &body)
}

// Unsigned integers of any size, as little-endian 32-bit limbs.

fn big_multiply(number: &mut Vec<u32>, factor: u32) {
    let mut carry = 0u64;
    for limb in number.iter_mut() {
        let product = u64::from(*limb) * u64::from(factor) + carry;
        *limb = product as u32;
        carry = product >> 32;
    }
    if carry != 0 {
        number.push(carry as u32);
    }
}

fn big_shift_left(number: &mut Vec<u32>, bits: u32) {
    let limbs = (bits / 32) as usize;
    let bits = bits % 32;
    if bits != 0 {
        let mut carry = 0u32;
        for limb in number.iter_mut() {
            let shifted = (*limb << bits) | carry;
            carry = *limb >> (32 - bits);
            *limb = shifted;
        }
        if carry != 0 {
            number.push(carry);
        }
    }
    number.splice(0..0, std::iter::repeat_n(0, limbs));
}

/// Decimal digits (values 0 to 9), most significant first, no leading zero; empty for zero.
fn big_decimal(mut number: Vec<u32>) -> Vec<u8> {
    const CHUNK: u64 = 1_000_000_000;
    let mut reversed = Vec::new();
    while number.last() == Some(&0) {
        number.pop();
    }
    while !number.is_empty() {
        let mut remainder = 0u64;
        for limb in number.iter_mut().rev() {
            let value = (remainder << 32) | u64::from(*limb);
            *limb = (value / CHUNK) as u32;
            remainder = value % CHUNK;
        }
        while number.last() == Some(&0) {
            number.pop();
        }
        for _ in 0..9 {
            reversed.push((remainder % 10) as u8);
            remainder /= 10;
        }
    }
    while reversed.last() == Some(&0) {
        reversed.pop();
    }
    reversed.reverse();
    reversed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_char, c_int, c_void, CStr, CString};

    extern "C" {
        fn snprintf(buffer: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
    }

    /// An argument as the device's variadic area holds it.
    #[derive(Debug, Clone, Copy)]
    enum Device {
        Four(u32),
        Eight(u64),
        /// A `char *`: its text, or null.
        Text(Option<&'static [u8]>),
    }

    /// One argument, both as the device packs it and as the host's `snprintf` takes it.
    trait Arg {
        type C;
        fn device(&self) -> Device;
        fn c(&self) -> Self::C;
    }

    impl Arg for i32 {
        type C = c_int;
        fn device(&self) -> Device {
            Device::Four(*self as u32)
        }
        fn c(&self) -> c_int {
            *self
        }
    }

    impl Arg for u32 {
        type C = u32;
        fn device(&self) -> Device {
            Device::Four(*self)
        }
        fn c(&self) -> u32 {
            *self
        }
    }

    impl Arg for i64 {
        type C = i64;
        fn device(&self) -> Device {
            Device::Eight(*self as u64)
        }
        fn c(&self) -> i64 {
            *self
        }
    }

    impl Arg for u64 {
        type C = u64;
        fn device(&self) -> Device {
            Device::Eight(*self)
        }
        fn c(&self) -> u64 {
            *self
        }
    }

    impl Arg for f64 {
        type C = f64;
        fn device(&self) -> Device {
            Device::Eight(self.to_bits())
        }
        fn c(&self) -> f64 {
            *self
        }
    }

    /// A string argument (`None`: a null pointer).
    struct S(Option<&'static CStr>);

    impl Arg for S {
        type C = *const c_char;
        fn device(&self) -> Device {
            Device::Text(self.0.map(CStr::to_bytes))
        }
        fn c(&self) -> *const c_char {
            self.0.map_or(std::ptr::null(), CStr::as_ptr)
        }
    }

    /// A pointer argument, by address.
    struct P(usize);

    impl Arg for P {
        type C = *const c_void;
        fn device(&self) -> Device {
            Device::Eight(self.0 as u64)
        }
        fn c(&self) -> *const c_void {
            self.0 as *const c_void
        }
    }

    /// What the device sends: the argument area (padding filled with 0xaa, which must never
    /// be read), the addresses of its non-null strings and their text.
    fn pack(args: &[Device], packed: bool) -> (Vec<u8>, Vec<u64>, Vec<Vec<u8>>) {
        let mut bytes = Vec::new();
        let mut addresses = Vec::new();
        let mut texts = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            let (value, size) = match *arg {
                Device::Four(v) => (u64::from(v), 4),
                Device::Eight(v) => (v, 8),
                Device::Text(Some(text)) => {
                    let address = 0x7f00_0000_1000 + i as u64 * 0x100;
                    addresses.push(address);
                    texts.push(text.to_vec());
                    (address, 8)
                }
                Device::Text(None) => (0, 8),
            };
            while !packed && bytes.len() % size != 0 {
                bytes.push(0xaa);
            }
            bytes.extend_from_slice(&value.to_le_bytes()[..size]);
        }
        (bytes, addresses, texts)
    }

    /// Formats as the server does for both packings, checking the counted size and the
    /// strings asked for on the way.
    fn ours(format_text: &str, args: &[Device]) -> Vec<u8> {
        let mut with_nul = format_text.as_bytes().to_vec();
        with_nul.push(0);
        let mut results = Vec::new();
        for packed in [false, true] {
            let (bytes, addresses, texts) = pack(args, packed);
            assert_eq!(
                argument_bytes(&with_nul, packed),
                bytes.len() as u64,
                "argument bytes of {format_text:?}, packed {packed}"
            );
            assert_eq!(
                string_arguments(&with_nul, &bytes, packed),
                addresses,
                "strings of {format_text:?}"
            );
            let text = format(&with_nul, &bytes, packed, &texts)
                .unwrap_or_else(|e| panic!("{format_text:?} packed {packed}: {e}"));
            results.push(text);
        }
        assert_eq!(
            results[0], results[1],
            "packed and unpacked differ for {format_text:?}"
        );
        results.swap_remove(0)
    }

    fn show(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// The host C library's output for a format and one argument of each kind.
    fn c_output(call: impl FnOnce(*mut c_char, usize) -> c_int) -> Vec<u8> {
        let mut buffer = vec![0u8; 8192];
        let written = call(buffer.as_mut_ptr().cast(), buffer.len());
        let written = usize::try_from(written).expect("snprintf failed");
        assert!(
            written < buffer.len(),
            "snprintf output too long for the test buffer"
        );
        buffer.truncate(written);
        buffer
    }

    /// Our output equals the host C library's (glibc) for this format and arguments.
    macro_rules! same {
        ($format:literal $(, $arg:expr)* $(,)?) => {{
            let device = [$(Arg::device(&$arg)),*];
            let expected = c_output(|buffer, size| {
                // SAFETY: `buffer` holds `size` bytes, the format is NUL-terminated, and each
                // argument has the C type its conversion reads.
                unsafe { snprintf(buffer, size, concat!($format, "\0").as_ptr().cast() $(, Arg::c(&$arg))*) }
            });
            let got = ours($format, &device);
            assert_eq!(show(&got), show(&expected), "format {:?}", $format);
            assert_eq!(got, expected, "format {:?}", $format);
        }};
    }

    /// Our output is `expected`, where LLVM's libc prints it (glibc may differ).
    macro_rules! llvm {
        ($expected:expr, $format:literal $(, $arg:expr)* $(,)?) => {{
            let device = [$(Arg::device(&$arg)),*];
            let got = ours($format, &device);
            assert_eq!(show(&got), show($expected.as_ref()), "format {:?}", $format);
        }};
    }

    fn c_i32(format: &CStr, value: i32) -> Vec<u8> {
        c_output(|buffer, size| {
            // SAFETY: as in `same!`; the format reads one `int`-sized integer.
            unsafe { snprintf(buffer, size, format.as_ptr(), value) }
        })
    }

    fn c_i64(format: &CStr, value: i64) -> Vec<u8> {
        c_output(|buffer, size| {
            // SAFETY: as in `same!`; the format reads one 64-bit integer.
            unsafe { snprintf(buffer, size, format.as_ptr(), value) }
        })
    }

    fn c_f64(format: &CStr, value: f64) -> Vec<u8> {
        c_output(|buffer, size| {
            // SAFETY: as in `same!`; the format reads one `double`.
            unsafe { snprintf(buffer, size, format.as_ptr(), value) }
        })
    }

    fn c_str(format: &CStr, value: &CStr) -> Vec<u8> {
        c_output(|buffer, size| {
            // SAFETY: as in `same!`; the format reads one string, NUL-terminated.
            unsafe { snprintf(buffer, size, format.as_ptr(), value.as_ptr()) }
        })
    }

    /// Every combination of the five flags.
    fn flag_sets() -> Vec<String> {
        (0..32u32)
            .map(|set| {
                "-+ #0"
                    .chars()
                    .enumerate()
                    .filter(|(i, _)| set & (1 << i) != 0)
                    .map(|(_, c)| c)
                    .collect()
            })
            .collect()
    }

    /// The formats a sweep tries: each flag set with each of these.
    struct Formats {
        lengths: &'static [&'static str],
        conversions: &'static [char],
        widths: &'static [&'static str],
        precisions: &'static [&'static str],
    }

    /// Each flag set, width and precision with each conversion, against glibc, for values
    /// `fits` accepts.
    fn sweep<T: Copy + std::fmt::Debug>(
        Formats {
            lengths,
            conversions,
            widths,
            precisions,
        }: Formats,
        values: &[T],
        fits: impl Fn(&str, char, T) -> bool,
        device: impl Fn(T) -> Device,
        c: impl Fn(&CStr, T) -> Vec<u8>,
    ) -> usize {
        let mut checked = 0;
        for flags in flag_sets() {
            for width in widths {
                for precision in precisions {
                    for length in lengths {
                        for &conversion in conversions {
                            let text = format!("%{flags}{width}{precision}{length}{conversion}");
                            let c_format = CString::new(text.clone()).expect("no NUL");
                            for &value in values {
                                if !fits(length, conversion, value) {
                                    continue;
                                }
                                let expected = c(&c_format, value);
                                let got = ours(&text, &[device(value)]);
                                assert_eq!(
                                    show(&got),
                                    show(&expected),
                                    "format {text:?} of {value:?}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        checked
    }

    #[test]
    fn integers_of_int_size_match_glibc() {
        let values = [
            0,
            1,
            -1,
            7,
            42,
            -42,
            127,
            -128,
            255,
            4660,
            32767,
            -32768,
            65535,
            0x1234_abcd,
            i32::MAX,
            i32::MIN,
        ];
        // A signed `%hhd` or `%hd` of a value out of its type's range prints differently
        // (see `llvm_keeps_the_sign_of_the_full_value`); the device never passes one.
        let fits = |length: &str, conversion: char, value: i32| match (length, conversion) {
            ("hh", 'd' | 'i') => i8::try_from(value).is_ok(),
            ("h", 'd' | 'i') => i16::try_from(value).is_ok(),
            _ => true,
        };
        let checked = sweep(
            Formats {
                lengths: &["", "hh", "h"],
                conversions: &['d', 'i', 'u', 'o', 'x', 'X'],
                widths: &["", "1", "9"],
                precisions: &["", ".", ".0", ".4"],
            },
            &values,
            fits,
            |v| Device::Four(v as u32),
            c_i32,
        );
        assert!(checked > 10_000);
    }

    #[test]
    fn integers_of_eight_bytes_match_glibc() {
        let values = [
            0,
            1,
            -1,
            255,
            -1_234_567_890_123,
            0x0123_4567_89ab_cdef,
            i64::MAX,
            i64::MIN,
        ];
        let checked = sweep(
            Formats {
                lengths: &["l", "ll", "j", "z", "t", "L"],
                conversions: &['d', 'i', 'u', 'o', 'x', 'X'],
                widths: &["", "25"],
                precisions: &["", ".0", ".22"],
            },
            &values,
            |_, _, _| true,
            |v| Device::Eight(v as u64),
            c_i64,
        );
        assert!(checked > 10_000);
    }

    fn float_values() -> Vec<f64> {
        vec![
            0.0,
            -0.0,
            1.0,
            -1.5,
            0.1,
            0.5,
            2.5,
            9.5,
            0.125,
            1.0 / 3.0,
            1234.5678,
            1e-5,
            9.9999e-5,
            0.000_123_45,
            123_456.0,
            999_999.4,
            9.999_999_5,
            1e15,
            1e21,
            -1e100,
            1e-300,
            5e-324,
            2.225e-308,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
        ]
    }

    #[test]
    fn floats_match_glibc() {
        let checked = sweep(
            Formats {
                lengths: &[""],
                conversions: &['f', 'F', 'e', 'E', 'g', 'G', 'a', 'A'],
                widths: &["", "12", "30"],
                precisions: &["", ".", ".1", ".3", ".12", ".17"],
            },
            &float_values(),
            |_, _, _| true,
            |v: f64| Device::Eight(v.to_bits()),
            c_f64,
        );
        assert!(checked > 100_000);
    }

    #[test]
    fn float_details_match_glibc() {
        same!("%f", 0.0);
        same!("%f %f", 1.0, -2.25);
        same!("%.0f %.0f %.0f %.0f", 0.5, 1.5, 2.5, 3.5);
        same!("%.1f %.1f %.2f", 0.25, 0.35, 1.005);
        same!("%.20f", 0.1);
        same!("%.60f", 1e-50);
        same!("%.1100f", 5e-324);
        same!("%f", f64::MAX);
        same!("%.30e", f64::MAX);
        same!("%.40e", 5e-324);
        same!("%e %e", 1e-310, 1e300);
        same!("%.2e", 9.9999);
        same!("%.0e %#.0e", 5.0, 5.0);
        same!("%g %g %g %g", 100_000.0, 1_000_000.0, 1e-4, 1e-5);
        same!("%.0g %.1g %.2g", 0.15, 0.25, 0.0945);
        same!("%#g %#.3g %#g", 1.0, 1.0, 0.0);
        same!("%.17g", 0.1);
        same!("%g %G", 5e-324, 1e-10);
        same!("%a %a %a %a", 1.0, 0.1, 3.0, 0.0);
        same!("%.0a %.0a %.0a", 1.5, 2.5, 1.96875);
        same!("%.1a %.3a %.12a", 0.1, 0.1, 1.999_999_999_999_999_8);
        same!("%.20a %.13a", 1.0, 0.1);
        same!("%a %a %a", 5e-324, f64::MIN_POSITIVE, f64::MAX);
        same!("%#a %#A %#.0a", 1.0, 2.0, 1.0);
        same!("%020a|%-20a|%+a", 1.0, -1.0, 1.0);
        same!(
            "%f %F %e %E %g %G %a %A",
            f64::INFINITY,
            f64::INFINITY,
            f64::NAN,
            f64::NAN,
            -f64::INFINITY,
            -f64::NAN,
            f64::NAN,
            f64::NEG_INFINITY
        );
        same!(
            "%05f|%-6f|%+f|% f|%06.2E",
            f64::INFINITY,
            f64::NAN,
            f64::INFINITY,
            f64::NAN,
            f64::NEG_INFINITY
        );
        same!("%*.*f|%-*.*e", 12i32, 3i32, 12.375, 12i32, 2i32, 12.375);
        same!("%.*f", -1i32, 2.5);
    }

    #[test]
    fn alternate_g_keeps_its_zeroes_after_a_carry() {
        // Rounded to six digits 999999.5 carries into 1e+06; with `#` LLVM keeps the five
        // decimals of the precision. glibc 2.36 prints "1.e+06", dropping them.
        llvm!("1.00000e+06|1.00000E+06", "%#g|%#G", 999_999.5, 999_999.5);
        same!(
            "%g|%G|%.6g|%#.7g",
            999_999.5,
            999_999.5,
            999_999.5,
            999_999.5
        );
    }

    #[test]
    fn long_double_is_a_double() {
        // The device's `long double` is its 8-byte `double`: `%Lf` prints it as `%f` would.
        for value in [0.1, -3.5, 1e300, 5e-324] {
            let expected = c_output(|buffer, size| {
                // SAFETY: as in `same!`; the format reads four `double`s.
                unsafe {
                    snprintf(
                        buffer,
                        size,
                        c"%f %e %g %a".as_ptr(),
                        value,
                        value,
                        value,
                        value,
                    )
                }
            });
            let got = ours("%Lf %Le %Lg %La", &[value.device(); 4]);
            assert_eq!(show(&got), show(&expected));
        }
    }

    #[test]
    fn integer_details_match_glibc() {
        same!("%d %i %u", 0i32, -17i32, 4_000_000_000u32);
        same!("%x %X %o", 0xdead_beefu32, 0xdead_beefu32, 0o777u32);
        same!("%#x %#X %#o %#o", 0u32, 255u32, 0u32, 8u32);
        same!("%#.0o %#.0x %.0d|", 0u32, 0u32, 0i32);
        same!("%#5o|%#-8x|%#08x|%#.5x", 8u32, 255u32, 255u32, 255u32);
        same!(
            "%+05d|% 05d|%-+6d|%08.3d|%-8.3d|",
            42i32,
            42i32,
            42i32,
            -42i32,
            -42i32
        );
        same!("%hhu %hhx %hu %hx", 300i32, -1i32, 70_000i32, -1i32);
        same!("%hhd %hd", -5i32, -1234i32);
        same!("%ld %lu %lx %lo", i64::MIN, u64::MAX, u64::MAX, u64::MAX);
        same!(
            "%lld %llu %jd %zu %zd %td %tx",
            -1i64,
            1u64 << 63,
            i64::MAX,
            12u64,
            -12i64,
            -3i64,
            255i64
        );
        same!("%*d|%-*d|%*d|", 6i32, 42i32, 6i32, 42i32, -6i32, 42i32);
        same!(
            "%.*d|%.*d|%*.*d",
            4i32,
            7i32,
            -1i32,
            7i32,
            8i32,
            4i32,
            -7i32
        );
        same!("%b %#b %#B %08b %.0b|", 5u32, 5u32, 6u32, 5u32, 0u32);
        same!("%d%%|%%|100%%", 50i32);
    }

    #[test]
    fn llvm_keeps_the_sign_of_the_full_value() {
        // LLVM takes the sign before cutting to `char` or `short`; glibc converts first and
        // prints "-1", "127" and "-25536".
        llvm!(
            "255 -129 40000",
            "%hhd %hhd %hd",
            255i32,
            -129i32,
            40_000i32
        );
        llvm!("-1 -1", "%hhd %hd", -1i32, -1i32);
    }

    #[test]
    fn chars_match_glibc() {
        same!("%c%c%c", 72i32, 105i32, 33i32);
        same!("[%5c][%-5c][%05c]", 65i32, 66i32, 67i32);
        same!("%c|", 0i32);
        same!("%c", 0x141i32);
        same!("%lc %5lc", 65u32, 66u32);
    }

    #[test]
    fn wide_chars_are_utf8() {
        // glibc converts by the locale and fails in the C locale for these; LLVM's libc
        // writes UTF-8 after its 22 release (LLVM 22, the low byte alone).
        llvm!("é|€|😀", "%lc|%lc|%lc", 0xe9u32, 0x20acu32, 0x1f600u32);
        // The width counts bytes: "é" is two.
        llvm!(" é", "%3lc", 0xe9u32);
        for value in [0xffff_ffffu32, 0x11_0000] {
            let args = value.to_le_bytes();
            assert_eq!(
                format(b"%lc\0", &args, false, &[]),
                Err(FormatError::InvalidWideCharacter { value })
            );
        }
    }

    #[test]
    fn strings_match_glibc() {
        let texts: [&CStr; 4] = [c"", c"a", c"hello", c"a longer string, past any width"];
        let mut checked = 0;
        for flags in ["", "-"] {
            for width in ["", "3", "12"] {
                for precision in ["", ".", ".0", ".2", ".7"] {
                    let text = format!("%{flags}{width}{precision}s");
                    let c_format = CString::new(text.clone()).expect("no NUL");
                    for value in texts {
                        let expected = c_str(&c_format, value);
                        let device = Device::Text(Some(value.to_bytes()));
                        // Leak-free 'static: the texts are literals.
                        let got = ours(&text, &[device]);
                        assert_eq!(show(&got), show(&expected), "format {text:?} of {value:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 120);
        same!("%s, %s!", S(Some(c"hello")), S(Some(c"world")));
        same!(
            "%.*s|%*s|%-*s|",
            2i32,
            S(Some(c"hello")),
            6i32,
            S(Some(c"ab")),
            6i32,
            S(Some(c"ab"))
        );
        same!("%s", S(None));
        same!("%10s|%-10s|%.6s", S(None), S(None), S(None));
    }

    #[test]
    fn wide_strings_print_the_bytes_fetched() {
        // The client fetches every string up to its first zero byte; those bytes print as
        // they are (LLVM would read them as `wchar_t`s, past the copy).
        llvm!(
            "ab|  ab|a",
            "%ls|%4ls|%.1ls",
            S(Some(c"ab")),
            S(Some(c"ab")),
            S(Some(c"ab"))
        );
        llvm!("(null)", "%ls", S(None));
    }

    #[test]
    fn null_strings_follow_llvm() {
        // glibc prints nothing for a null string cut below six characters.
        llvm!("(nu|", "%.3s|", S(None));
        llvm!("  (n", "%4.2s", S(None));
    }

    #[test]
    fn strings_are_attributed_by_position() {
        // LLVM's server would print "a (null) (null)" here: it hands "c" to the null one.
        llvm!(
            "a (null) c",
            "%s %s %s",
            S(Some(c"a")),
            S(None),
            S(Some(c"c"))
        );
        llvm!(
            "(null) x 5 y",
            "%s %s %d %s",
            S(None),
            S(Some(c"x")),
            5i32,
            S(Some(c"y"))
        );
        let (bytes, addresses, _) = pack(
            &[S(None).device(), S(Some(c"x")).device(), 5.device()],
            false,
        );
        assert_eq!(string_arguments(b"%s %s %d\0", &bytes, false), addresses);
        assert_eq!(addresses.len(), 1);
        assert_eq!(
            format(b"%s %s %d\0", &bytes, false, &[]),
            Err(FormatError::MissingString { index: 0 })
        );
        // The text stops at a NUL it may carry.
        let bytes = 0x1000u64.to_le_bytes();
        assert_eq!(
            format(b"[%s]", &bytes, false, &[b"ab\0cd".to_vec()]),
            Ok(b"[ab]".to_vec())
        );
    }

    #[test]
    fn pointers() {
        same!("%p %p", P(0x1234), P(0xffff_ffff_ffff_fff0));
        same!("[%20p][%-20p]", P(0xdead_beef), P(0xdead_beef));
        same!("[%.8p][%018p]", P(0xbeef), P(0xbeef));
        // glibc prints "(nil)" and honours `+` and space.
        llvm!(
            "(nullptr)|(nu|   (nullptr)",
            "%p|%.3p|%12p",
            P(0),
            P(0),
            P(0)
        );
        llvm!("0x1234 0x1234", "%+p % p", P(0x1234), P(0x1234));
    }

    #[test]
    fn percent_and_unknown_conversions() {
        same!("%%|%d%%", 5i32);
        // LLVM ignores everything between '%' and '%'; so does glibc.
        same!("[%5%][%-5%]");
        // Unknown conversions are copied as text; a '*' among them still reads its int.
        llvm!("%y|%5k|%*y 7", "%y|%5k|%*y %d", 3i32, 7i32);
        llvm!("abc%", "abc%");
        llvm!("%-5", "%-5");
        // No `%m` (strerror) and no `%1$d` (argument indexes) in LLVM's server.
        llvm!("%m|%1$d", "%m|%1$d");
        // No `'` flag (glibc groups thousands by the locale, none in the C locale).
        llvm!("%'d 5", "%'d %d", 5i32);
        // C23 bit widths, which this glibc lacks.
        llvm!(
            "7 1 -5 %w0d %wd",
            "%w3d %wf8u %w64d %w0d %wd",
            5807i32,
            257i32,
            -5i64
        );
    }

    #[test]
    fn write_count_is_refused() {
        let args = [5u8, 0, 0, 0];
        assert_eq!(
            format(b"%d%n\0", &args, false, &[]),
            Err(FormatError::WriteCountRefused { at: 2 })
        );
        // As LLVM counts it: `%n` reads no argument in its server.
        assert_eq!(argument_bytes(b"%d%n%d\0", false), 8);
        assert_eq!(argument_bytes(b"%hhn\0", true), 0);
    }

    #[test]
    fn argument_bytes_follow_alignment_unless_packed() {
        let cases: [(&[u8], u64, u64); 14] = [
            (b"no conversions\0", 0, 0),
            (b"%%\0", 0, 0),
            (b"%d%f\0", 16, 12),
            (b"%d%ld\0", 16, 12),
            (b"%d%d%ld\0", 16, 16),
            (b"%hhd%c%s\0", 16, 16),
            (b"%*.*f\0", 16, 16),
            (b"%c%p\0", 16, 12),
            (b"%lc\0", 4, 4),
            (b"%Lf\0", 8, 8),
            (b"%w8d%w64d\0", 16, 12),
            (b"%d\0%d", 4, 4),
            (b"%d%y%d\0", 8, 8),
            (b"%d%*y%f\0", 16, 16),
        ];
        for (format_text, unpacked, packed) in cases {
            assert_eq!(
                argument_bytes(format_text, false),
                unpacked,
                "{}",
                show(format_text)
            );
            assert_eq!(
                argument_bytes(format_text, true),
                packed,
                "{}",
                show(format_text)
            );
        }
        // Without a NUL the whole buffer is the format.
        assert_eq!(argument_bytes(b"%d%d", false), 8);
    }

    #[test]
    fn packed_and_unpacked_read_the_same_values() {
        llvm!("1 2.5 x 3", "%hhd %g %c %lld", 1i32, 2.5, 120i32, 3i64);
        let unpacked = [1, 0, 0, 0, 0xaa, 0xaa, 0xaa, 0xaa, 2, 0, 0, 0, 0, 0, 0, 0];
        let packed = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            format(b"%d %ld\0", &unpacked, false, &[]),
            Ok(b"1 2".to_vec())
        );
        assert_eq!(format(b"%d %ld\0", &packed, true, &[]), Ok(b"1 2".to_vec()));
    }

    #[test]
    fn short_buffers_are_errors() {
        assert_eq!(
            format(b"%d %d\0", &[1, 0, 0, 0], false, &[]),
            Err(FormatError::ArgumentsTooShort {
                needed: 8,
                available: 4
            })
        );
        assert_eq!(
            format(b"%d %ld\0", &[0; 12], false, &[]),
            Err(FormatError::ArgumentsTooShort {
                needed: 16,
                available: 12
            })
        );
        assert_eq!(
            format(b"%d %ld\0", &[0; 12], true, &[]),
            Ok(b"0 0".to_vec())
        );
        assert_eq!(
            format(b"%*d\0", &[], true, &[]),
            Err(FormatError::ArgumentsTooShort {
                needed: 4,
                available: 0
            })
        );
        // The strings before the shortfall are still listed.
        let mut args = 0x1000u64.to_le_bytes().to_vec();
        args.extend_from_slice(&[0; 4]);
        assert_eq!(string_arguments(b"%s %s\0", &args, false), vec![0x1000]);
        assert_eq!(string_arguments(b"%s %s\0", &[], false), Vec::<u64>::new());
    }

    #[test]
    fn huge_widths_are_refused() {
        let width = i32::MAX.to_le_bytes();
        let mut args = width.to_vec();
        args.extend_from_slice(&[1, 0, 0, 0]);
        assert_eq!(
            format(b"%*d\0", &args, true, &[]),
            Err(FormatError::OutputTooLong { limit: MAX_OUTPUT })
        );
        let value = 1.0f64.to_bits().to_le_bytes();
        assert_eq!(
            format(b"%.2000000000f\0", &value, true, &[]),
            Err(FormatError::OutputTooLong { limit: MAX_OUTPUT })
        );
        assert_eq!(
            format(b"%.2000000000a\0", &value, true, &[]),
            Err(FormatError::OutputTooLong { limit: MAX_OUTPUT })
        );
        assert_eq!(
            format(b"%99999999999999999999d\0", &[1, 0, 0, 0], true, &[]),
            Err(FormatError::OutputTooLong { limit: MAX_OUTPUT })
        );
        // A large but sane width is fine.
        assert_eq!(
            format(b"%1000d\0", &[1, 0, 0, 0], true, &[]).map(|t| t.len()),
            Ok(1000)
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let errors = [
            FormatError::WriteCountRefused { at: 3 },
            FormatError::ArgumentsTooShort {
                needed: 8,
                available: 4,
            },
            FormatError::InvalidWideCharacter { value: 0x110000 },
            FormatError::MissingString { index: 1 },
            FormatError::OutputTooLong { limit: MAX_OUTPUT },
        ];
        for error in errors {
            let text = error.to_string();
            assert!(text.len() > 20, "{text}");
        }
        assert!(FormatError::WriteCountRefused { at: 3 }
            .to_string()
            .contains("%n"));
        assert!(FormatError::ArgumentsTooShort {
            needed: 8,
            available: 4
        }
        .to_string()
        .contains('8'));
    }

    #[test]
    fn format_stops_at_nul() {
        assert_eq!(format(b"ab\0%d", &[], false, &[]), Ok(b"ab".to_vec()));
        assert_eq!(format(b"ab", &[], false, &[]), Ok(b"ab".to_vec()));
        assert_eq!(format(b"", &[], false, &[]), Ok(Vec::new()));
    }
}
