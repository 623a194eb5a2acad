//! An on-demand JSON reader for serde, after simdjson's On-Demand API: what a visitor reads is
//! read as serde_json reads it, and what it skips (`IgnoredAny`, a struct's unknown fields) is
//! only checked for its structure: strings closed, brackets balanced (counted, as simdjson counts
//! them when it skips, not matched by kind).
//!
//! An AdmissionReview is mostly parts no rule reads (managedFields, containers, volumes, status,
//! kubectl's last-applied annotation), and serde_json validates every byte of them: about half of
//! a review's instructions. Here they are skipped 64 bytes at a time: SIMD compares (AVX2 where
//! the CPU has it, else SSE2: `ondemand::scan`) turn quotes, backslashes and brackets into bit masks,
//! and the bytes inside strings and the nesting depth follow by arithmetic on the masks
//! (simdjson's stage 1).
//!
//! What is read goes through the same serde visitors as with serde_json; maps, arrays, options,
//! plain strings, plain integers (given to visitors as serde_json gives them), booleans and null
//! are read here, and every other value (other numbers, escaped strings, enums, raw values) is cut
//! out by the structural scan and handed to serde_json whole, so it is accepted and converted
//! exactly as serde_json would. The differential tests and the `review` fuzz target
//! hold the two readers to this: where serde_json accepts a body this reader gives the same
//! result, and where only this reader accepts it, replacing each skipped value with `null` gives
//! a body serde_json accepts with the same result.

use std::borrow::Cow;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, Error as _, Visitor};
use serde_json::de::StrRead;
use serde_json::Error;

/// serde_json's recursion limit for the values it reads (skipped values have none).
const MAX_DEPTH: u32 = 128;

/// serde_json's name for a raw value (`serde_json::value::RawValue`).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The first `"`, `\` or control character at or after `i`: where a plain string stops.
/// Sixteen bytes at a time (one SIMD compare of each kind); most keys and values end in the
/// first sixteen.
#[inline]
pub(crate) fn string_stop(b: &[u8], mut i: usize) -> Option<usize> {
    use wide::u8x16;
    while let Some(chunk) = b.get(i..i + 16) {
        let Ok(bytes) = <[u8; 16]>::try_from(chunk) else {
            break;
        };
        let v = u8x16::new(bytes);
        let stop = v.simd_eq(u8x16::splat(b'"'))
            | v.simd_eq(u8x16::splat(b'\\'))
            | v.min(u8x16::splat(0x1f)).simd_eq(v);
        let m = stop.to_bitmask();
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Bytes that may follow a value read here (a plain scalar ends at one of them).
#[inline]
fn ends_value(c: u8) -> bool {
    matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r')
}

/// Bytes that end a scalar (a number or a literal) in the structural scan.
#[inline]
fn ends_scalar(c: u8) -> bool {
    matches!(
        c,
        b',' | b'}' | b']' | b':' | b' ' | b'\n' | b'\t' | b'\r' | b'"' | b'{' | b'['
    )
}

/// What a view reads a skipped field as ([`Deserializer::skip_as`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Object,
    Array,
    Scalar,
}

/// A JSON text read on demand. `&mut Deserializer` is a [`serde::Deserializer`].
pub struct Deserializer<'de> {
    text: &'de str,
    pos: usize,
    /// Containers read (not skipped) around the current position.
    depth: u32,
    /// The byte ranges of the skipped values, when asked for (differential tests).
    skipped: Option<Vec<Range<usize>>>,
}

impl<'de> Deserializer<'de> {
    pub fn new(text: &'de str) -> Deserializer<'de> {
        Deserializer {
            text,
            pos: 0,
            depth: 0,
            skipped: None,
        }
    }

    /// Records the byte range of every skipped value, for [`Deserializer::skipped`].
    pub fn record_skips(mut self) -> Deserializer<'de> {
        self.skipped = Some(Vec::new());
        self
    }

    /// The values skipped so far, in order, when [`Deserializer::record_skips`] was asked for.
    pub fn skipped(&self) -> &[Range<usize>] {
        self.skipped.as_deref().unwrap_or(&[])
    }

    /// Only whitespace may follow the value.
    pub fn end(&mut self) -> Result<(), Error> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }

    fn bytes(&self) -> &'de [u8] {
        self.text.as_bytes()
    }

    fn error(&self, what: &str) -> Error {
        Error::custom(format_args!("{what} at byte {}", self.pos))
    }

    /// Whether the next value is an object (nothing consumed).
    pub fn at_object(&mut self) -> bool {
        self.peek() == Some(b'{')
    }

    /// Moves past whitespace to where the next value starts.
    pub fn at_value(&mut self) {
        self.peek();
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        // The apiserver sends compact JSON: the next byte is almost always no whitespace, which
        // one comparison tells (every JSON whitespace byte is at most a space).
        match b.get(self.pos) {
            Some(&c) if c > b' ' => return Some(c),
            None => return None,
            _ => {}
        }
        while let Some(&c) = b.get(self.pos) {
            if !matches!(c, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(c);
            }
            self.pos += 1;
        }
        None
    }

    fn slice(&self, r: Range<usize>) -> Result<&'de str, Error> {
        // Ranges start and end at ASCII bytes, so always at character boundaries.
        self.text
            .get(r)
            .ok_or_else(|| self.error("internal: a value's bounds split a character"))
    }

    /// After the opening quote at `start - 1`: the position after the closing quote.
    fn skip_string(&self, start: usize) -> Result<usize, Error> {
        let b = self.bytes();
        // Most strings end within sixteen bytes, without an escape: look there first.
        if let Some(Ok(chunk)) = b.get(start..start + 16).map(<[u8; 16]>::try_from) {
            use wide::u8x16;
            let v = u8x16::new(chunk);
            let m = (v.simd_eq(u8x16::splat(b'"')) | v.simd_eq(u8x16::splat(b'\\'))).to_bitmask();
            let j = start + m.trailing_zeros() as usize;
            if m != 0 && b.get(j) == Some(&b'"') {
                return Ok(j + 1);
            }
        }
        // Inside a string only quotes and backslashes matter: half the compares of a block.
        scan::string_end(b, start).ok_or_else(|| self.error("EOF while parsing a string"))
    }

    /// From an opening bracket at `start`: the position after the bracket that closes it, by
    /// depth alone ([`scan::container_end`]).
    fn skip_container(&self, start: usize) -> Result<usize, Error> {
        let b = self.bytes();
        // `{}` and `[]` (an empty securityContext, resources or status) need no block.
        if let (Some(&open), Some(&close)) = (b.get(start), b.get(start + 1)) {
            if close == open + 2 {
                return Ok(start + 2);
            }
        }
        scan::container_end(b, start).ok_or_else(|| self.error("EOF while parsing a value"))
    }

    /// The extent of the next value, by structure alone; `pos` moves past it.
    fn skip_extent(&mut self) -> Result<Range<usize>, Error> {
        let start = match self.peek() {
            Some(_) => self.pos,
            None => return Err(self.error("EOF while parsing a value")),
        };
        let b = self.bytes();
        let end = match b.get(start) {
            Some(b'"') => self.skip_string(start + 1)?,
            Some(b'{' | b'[') => self.skip_container(start)?,
            Some(b'}' | b']' | b',' | b':') => return Err(self.error("expected value")),
            _ => {
                let mut i = start + 1;
                while b.get(i).is_some_and(|&c| !ends_scalar(c)) {
                    i += 1;
                }
                i
            }
        };
        self.pos = end;
        Ok(start..end)
    }

    fn skip(&mut self) -> Result<(), Error> {
        let r = self.skip_extent()?;
        if let Some(s) = &mut self.skipped {
            s.push(r);
        }
        Ok(())
    }

    /// Hands the next value to serde_json whole.
    fn delegate<T>(
        &mut self,
        read: impl FnOnce(&mut serde_json::Deserializer<StrRead<'de>>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let r = self.skip_extent()?;
        let mut de = serde_json::Deserializer::from_str(self.slice(r)?);
        let value = read(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// A string without escapes, borrowed; `None` (nothing consumed) when it has escapes.
    #[inline]
    fn plain_string(&mut self) -> Result<Option<&'de str>, Error> {
        let start = self.pos + 1;
        let b = self.bytes();
        match string_stop(b, start) {
            Some(j) if b.get(j) == Some(&b'"') => {
                let s = self.slice(start..j)?;
                self.pos = j + 1;
                Ok(Some(s))
            }
            Some(j) if b.get(j) == Some(&b'\\') => Ok(None),
            Some(_) => Err(self.error("control character in a string")),
            None => Err(self.error("EOF while parsing a string")),
        }
    }

    // Direct reading, for hand-written readers of hot views: each reads one value of the plain
    // shape it names and returns an error for anything else (another type, an escaped key, a
    // value serde would read differently), on which the caller falls back to serde.

    /// A JSON object: `entry` is called with each key (escape-free) and must consume its value.
    pub fn read_object(
        &mut self,
        mut entry: impl FnMut(&mut Self, &'de str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.peek() != Some(b'{') {
            return Err(self.error("expected an object"));
        }
        self.enter()?;
        let mut first = true;
        loop {
            let mut c = self.peek();
            if c == Some(b'}') {
                self.pos += 1;
                self.depth -= 1;
                return Ok(());
            }
            if !first {
                if c != Some(b',') {
                    return Err(self.error("expected `,` or `}`"));
                }
                self.pos += 1;
                c = self.peek();
            }
            first = false;
            if c != Some(b'"') {
                return Err(self.error("key must be a string"));
            }
            let Some(key) = self.plain_string()? else {
                return Err(self.error("escaped key"));
            };
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            entry(self, key)?;
        }
    }

    /// A JSON array: `element` is called for each element and must consume it.
    pub fn read_array(
        &mut self,
        mut element: impl FnMut(&mut Self) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.peek() != Some(b'[') {
            return Err(self.error("expected an array"));
        }
        self.enter()?;
        let mut first = true;
        loop {
            let mut c = self.peek();
            if c == Some(b']') {
                self.pos += 1;
                self.depth -= 1;
                return Ok(());
            }
            if !first {
                if c != Some(b',') {
                    return Err(self.error("expected `,` or `]`"));
                }
                self.pos += 1;
                c = self.peek();
                if c == Some(b']') {
                    return Err(self.error("trailing comma"));
                }
            }
            first = false;
            if c.is_none() {
                return Err(self.error("EOF while parsing a value"));
            }
            element(self)?;
        }
    }

    /// Consumes a `null`, if that is what comes next.
    pub fn read_null(&mut self) -> bool {
        if self.peek() != Some(b'n') {
            return false;
        }
        let ends = self
            .bytes()
            .get(self.pos + 4)
            .is_none_or(|&c| ends_value(c));
        if ends && self.literal("null").is_ok() {
            return true;
        }
        false
    }

    /// A string, escapes and all, as serde reads a `String`. (Not through [`Self::read_str`]:
    /// going through a `Cow` costs some 15 instructions a string on the hot path.)
    pub fn read_string(&mut self) -> Result<String, Error> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        match self.plain_string()? {
            Some(s) => Ok(s.to_owned()),
            None => self.delegate(|de| de::Deserialize::deserialize(de)),
        }
    }

    /// A string, borrowed from the text when it has no escapes (as serde reads a
    /// `#[serde(borrow)] Cow<str>`): names that are only compared cost no allocation.
    pub fn read_str(&mut self) -> Result<Cow<'de, str>, Error> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        match self.plain_string()? {
            Some(s) => Ok(Cow::Borrowed(s)),
            None => self
                .delegate(|de| de::Deserialize::deserialize(de))
                .map(Cow::Owned),
        }
    }

    /// `null` as `None`, else a string, as serde reads an `Option<String>`.
    pub fn read_opt_string(&mut self) -> Result<Option<String>, Error> {
        if self.read_null() {
            return Ok(None);
        }
        self.read_string().map(Some)
    }

    /// A plain integer in `i64`.
    pub fn read_i64(&mut self) -> Result<i64, Error> {
        match self.plain_integer() {
            Some(Number::NonNegative(n)) => {
                i64::try_from(n).map_err(|_| self.error("out of range"))
            }
            Some(Number::Negative(n)) => Ok(n),
            None => Err(self.error("expected an integer")),
        }
    }

    /// Skips the next value (checked for structure only).
    pub fn skip_value(&mut self) -> Result<(), Error> {
        self.skip()
    }

    /// Skips the next value where a view types it as `shape`: an object or an array of another
    /// shape is an error (the reader's caller then hands the body to serde), since blanked it
    /// would still be what the view cannot read. Scalars and `null` blank to `null`, which every
    /// optional field reads.
    pub fn skip_as(&mut self, shape: Shape) -> Result<(), Error> {
        match (self.peek(), shape) {
            (Some(b'{'), Shape::Array | Shape::Scalar)
            | (Some(b'['), Shape::Object | Shape::Scalar) => {
                Err(self.error("a skipped value of another type than its field's"))
            }
            _ => self.skip(),
        }
    }

    /// Whether the next value is a non-empty object or array (the values worth recognizing
    /// as copies); when it is, [`Deserializer::position`] is where it starts.
    #[inline]
    pub fn worth_copying(&mut self) -> bool {
        match self.peek() {
            Some(open @ (b'{' | b'[')) => self.bytes().get(self.pos + 1) != Some(&(open + 2)),
            _ => false,
        }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    /// Reads with `read` the value at `at`, one this reader skipped earlier (so checked for
    /// structure), and comes back to where it was (an error ends the whole read). It is read at
    /// the current depth, not the one it was skipped at: fine for values whose read parts nest
    /// a few levels (a pod's metadata), not for arbitrary ones. With
    /// [`Deserializer::record_skips`], the values `read` skips inside it take the place of the
    /// whole.
    pub fn reread<T>(
        &mut self,
        at: Range<usize>,
        read: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let (pos, depth) = (self.pos, self.depth);
        if let Some(skipped) = &mut self.skipped {
            skipped.retain(|r| *r != at);
        }
        self.pos = at.start;
        let value = read(self)?;
        if self.pos != at.end {
            return Err(self.error("internal: a value read again ended elsewhere"));
        }
        (self.pos, self.depth) = (pos, depth);
        if let Some(skipped) = &mut self.skipped {
            skipped.sort_unstable_by_key(|r| r.start);
        }
        Ok(value)
    }

    /// Consumes the next value when its text is that of the value already read at `of` (which
    /// this reader accepted there, so it reads the same here); `false`, nothing consumed,
    /// otherwise. Strings and containers end themselves; a scalar must end where `of` ended.
    /// With [`Deserializer::record_skips`], the copy is recorded as skipped whole (`whole`:
    /// the caller would have skipped it) or as the values skipped inside `of`, moved here.
    pub fn skip_copy(&mut self, of: Range<usize>, whole: bool) -> bool {
        self.peek();
        let start = self.pos;
        let b = self.bytes();
        let end = start + of.len();
        let (Some(copy), Some(original)) = (b.get(start..end), b.get(of.clone())) else {
            return false;
        };
        if copy != original || of.is_empty() {
            return false;
        }
        let closed = matches!(copy.first(), Some(b'"' | b'{' | b'['));
        if !closed && b.get(end).is_some_and(|&c| !ends_value(c)) {
            return false;
        }
        self.pos = end;
        if let Some(skipped) = &mut self.skipped {
            if whole {
                skipped.push(start..end);
            } else {
                let moved: Vec<Range<usize>> = skipped
                    .iter()
                    .filter(|r| r.start >= of.start && r.end <= of.end)
                    .map(|r| r.start - of.start + start..r.end - of.start + start)
                    .collect();
                skipped.extend(moved);
            }
        }
        true
    }

    /// Consumes `,"key":value` when it is the text at `of`, which this reader accepted as the
    /// next entry of an object at the same depth (so it reads the same here); `false`, nothing
    /// consumed, otherwise, and always while skips are recorded. A scalar at the end must end
    /// there.
    pub fn skip_same_entry(&mut self, of: Range<usize>) -> bool {
        if self.skipped.is_some() {
            return false;
        }
        let b = self.bytes();
        let end = self.pos + of.len();
        let (Some(copy), Some(original)) = (b.get(self.pos..end), b.get(of)) else {
            return false;
        };
        let closed = matches!(copy.last(), Some(b'"' | b'}' | b']'));
        if copy != original || !(closed || b.get(end).is_some_and(|&c| ends_value(c))) {
            return false;
        }
        self.pos = end;
        true
    }

    /// A plain integer, consumed: no fraction, exponent or leading zero, at most 18 digits
    /// (no overflow), not `-0` (serde_json reads it as a float), and followed by the end of a
    /// value. `None` (nothing consumed) for anything else.
    #[inline]
    fn plain_integer(&mut self) -> Option<Number> {
        self.peek()?;
        let b = self.bytes();
        let negative = b.get(self.pos) == Some(&b'-');
        let first = self.pos + usize::from(negative);
        let mut i = first;
        let mut n: u64 = 0;
        while let Some(&c) = b.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            n = n * 10 + u64::from(c - b'0');
            i += 1;
            if i - first > 18 {
                return None;
            }
        }
        let digits = i - first;
        let leading_zero = digits > 1 && b.get(first) == Some(&b'0');
        let ends = b.get(i).is_none_or(|&c| ends_value(c));
        if digits == 0 || leading_zero || !ends || (negative && n == 0) {
            return None;
        }
        self.pos = i;
        Some(if negative {
            Number::Negative(-(n as i64))
        } else {
            Number::NonNegative(n)
        })
    }

    /// `true` or `false` followed by the end of a value, consumed.
    #[inline]
    fn plain_bool(&mut self) -> Option<bool> {
        self.peek()?;
        let rest = self.bytes().get(self.pos..)?;
        let (value, len) = if rest.starts_with(b"true") {
            (true, 4)
        } else if rest.starts_with(b"false") {
            (false, 5)
        } else {
            return None;
        };
        let ends = rest.get(len).is_none_or(|&c| ends_value(c));
        if !ends {
            return None;
        }
        self.pos += len;
        Some(value)
    }

    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth >= MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        self.pos += 1;
        Ok(())
    }

    fn visit_map<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let mut access = Access {
            de: self,
            first: true,
            done: false,
        };
        let value = visitor.visit_map(&mut access)?;
        let done = access.done;
        self.depth -= 1;
        if !done {
            return Err(self.error("trailing characters in a map"));
        }
        Ok(value)
    }

    fn visit_seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let mut access = Access {
            de: self,
            first: true,
            done: false,
        };
        let value = visitor.visit_seq(&mut access)?;
        let done = access.done;
        self.depth -= 1;
        if !done {
            return Err(self.error("trailing characters in an array"));
        }
        Ok(value)
    }

    fn literal(&mut self, word: &str) -> Result<(), Error> {
        match self.text.get(self.pos..self.pos + word.len()) {
            Some(w) if w == word => {
                self.pos += word.len();
                Ok(())
            }
            _ => Err(self.error("expected ident")),
        }
    }
}

/// An integer as serde_json hands it to a visitor.
enum Number {
    NonNegative(u64),
    Negative(i64),
}

/// The entries of a map or the elements of an array being read.
struct Access<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
    /// The closing bracket was read.
    done: bool,
}

impl Access<'_, '_> {
    /// Before an entry or an element: false at the closing bracket (consumed).
    fn has_next(&mut self, close: u8) -> Result<bool, Error> {
        let mut c = self.de.peek();
        if c == Some(close) {
            self.de.pos += 1;
            self.done = true;
            return Ok(false);
        }
        if !self.first {
            if c != Some(b',') {
                return Err(self.de.error("expected `,` or a closing bracket"));
            }
            self.de.pos += 1;
            c = self.de.peek();
            if c == Some(close) {
                return Err(self.de.error("trailing comma"));
            }
        }
        self.first = false;
        if c.is_none() {
            return Err(self.de.error("EOF while parsing a value"));
        }
        Ok(true)
    }
}

impl<'de> de::MapAccess<'de> for Access<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.done || !self.has_next(b'}')? {
            return Ok(None);
        }
        if self.de.peek() != Some(b'"') {
            return Err(self.de.error("key must be a string"));
        }
        match self.de.plain_string()? {
            Some(key) => seed
                .deserialize(de::value::BorrowedStrDeserializer::<Error>::new(key))
                .map(Some),
            None => {
                let key: String = self.de.delegate(|de| de::Deserialize::deserialize(de))?;
                seed.deserialize(de::value::StringDeserializer::<Error>::new(key))
                    .map(Some)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        if self.de.peek() != Some(b':') {
            return Err(self.de.error("expected `:`"));
        }
        self.de.pos += 1;
        seed.deserialize(&mut *self.de)
    }
}

impl<'de> de::SeqAccess<'de> for Access<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.done || !self.has_next(b']')? {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

/// Number methods: a plain integer is read here and given to the visitor as serde_json gives it
/// (`visit_u64`, or `visit_i64` when negative; the visitor converts); any other number is
/// serde_json's.
macro_rules! numbers {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.plain_integer() {
                Some(Number::NonNegative(n)) => visitor.visit_u64(n),
                Some(Number::Negative(n)) => visitor.visit_i64(n),
                None => self.delegate(|de| de::Deserializer::$method(de, visitor)),
            }
        }
    )*};
}

/// Methods that serde_json answers for the whole value.
macro_rules! delegated {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.delegate(|de| de::Deserializer::$method(de, visitor))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    numbers!(
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64
    );

    delegated!(
        deserialize_char,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit
    );

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.plain_bool() {
            Some(b) => visitor.visit_bool(b),
            None => self.delegate(|de| de::Deserializer::deserialize_bool(de, visitor)),
        }
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'{') => self.visit_map(visitor),
            Some(b'[') => self.visit_seq(visitor),
            Some(b'"') => self.deserialize_str(visitor),
            Some(b't' | b'f') => self.deserialize_bool(visitor),
            Some(b'-' | b'0'..=b'9') => match self.plain_integer() {
                Some(Number::NonNegative(n)) => visitor.visit_u64(n),
                Some(Number::Negative(n)) => visitor.visit_i64(n),
                None => self.delegate(|de| de::Deserializer::deserialize_any(de, visitor)),
            },
            _ => self.delegate(|de| de::Deserializer::deserialize_any(de, visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.peek() == Some(b'"') {
            if let Some(s) = self.plain_string()? {
                return visitor.visit_borrowed_str(s);
            }
        }
        self.delegate(|de| de::Deserializer::deserialize_str(de, visitor))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'n') => {
                self.literal("null")?;
                visitor.visit_none()
            }
            Some(_) => visitor.visit_some(self),
            None => Err(self.error("EOF while parsing a value")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == RAW_VALUE_TOKEN {
            return self
                .delegate(|de| de::Deserializer::deserialize_newtype_struct(de, name, visitor));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'[') => self.visit_seq(visitor),
            _ => self.delegate(|de| de::Deserializer::deserialize_seq(de, visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'{') => self.visit_map(visitor),
            _ => self.delegate(|de| de::Deserializer::deserialize_map(de, visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // As serde_json: a struct may also be written as an array of its fields.
        match self.peek() {
            Some(b'{') => self.visit_map(visitor),
            Some(b'[') => self.visit_seq(visitor),
            _ => {
                self.delegate(|de| de::Deserializer::deserialize_struct(de, name, fields, visitor))
            }
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.delegate(|de| de::Deserializer::deserialize_enum(de, name, variants, visitor))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.skip()?;
        visitor.visit_unit()
    }
}

mod scan;

#[cfg(test)]
mod tests;
