//! `jsonb`'s text output read from its binary form: what PostgreSQL's `jsonb_out` prints (no
//! indentation), for the trail's canonical encoding, which hashes a step's `args` as that text.
//!
//! It reads the format of `utils/jsonb.h` (a container header, its entries' types and lengths
//! or end offsets, then their data, numbers as `numeric`s and nested containers aligned to 4
//! bytes) and prints as `JsonbToCStringWorker`, `escape_json` and `numeric_out` do. Anything it
//! does not read with certainty (a malformed value, a special number, nesting deeper than
//! [`MAX_DEPTH`]) is `None`, and the caller asks `jsonb_out` itself: the text is always
//! PostgreSQL's.

const JB_CMASK: u32 = 0x0FFF_FFFF;
const JB_FSCALAR: u32 = 0x1000_0000;
const JB_FOBJECT: u32 = 0x2000_0000;
const JB_FARRAY: u32 = 0x4000_0000;
const JENTRY_OFFLENMASK: u32 = 0x0FFF_FFFF;
const JENTRY_TYPEMASK: u32 = 0x7000_0000;
const JENTRY_HAS_OFF: u32 = 0x8000_0000;
const JENTRY_ISSTRING: u32 = 0x0000_0000;
const JENTRY_ISNUMERIC: u32 = 0x1000_0000;
const JENTRY_ISBOOL_FALSE: u32 = 0x2000_0000;
const JENTRY_ISBOOL_TRUE: u32 = 0x3000_0000;
const JENTRY_ISNULL: u32 = 0x4000_0000;
const JENTRY_ISCONTAINER: u32 = 0x5000_0000;

/// Containers nested deeper than this are left to `jsonb_out` (no deep recursion here).
pub const MAX_DEPTH: usize = 32;
/// Values longer than this, or whose text grows longer, are left to `jsonb_out`, which
/// allocates in PostgreSQL's memory contexts and raises an error past what they allow (a
/// numeric of a few bytes can print as 100,000 digits).
pub const MAX_LEN: usize = 1 << 20;

/// The text `jsonb_out` prints for the jsonb whose bytes (after the varlena header) are `data`.
pub fn to_text(data: &[u8]) -> Option<String> {
    // the varlena headers of numerics are read in the little-endian layout
    if cfg!(target_endian = "big") || data.len() > MAX_LEN {
        return None;
    }
    let mut out = String::with_capacity(data.len() + data.len() / 2 + 8);
    let header = u32_at(data, 0)?;
    if header & JB_FSCALAR != 0 {
        // a scalar alone: an array of one that prints as its element
        if header & JB_FARRAY == 0 || header & JB_FOBJECT != 0 || header & JB_CMASK != 1 {
            return None;
        }
        let c = Container::new(data)?;
        let (kind, start, len) = c.entries(0).next()??;
        c.value(kind, start, len, &mut out, 1)?;
    } else {
        container(data, &mut out, 1)?;
    }
    (out.len() <= MAX_LEN).then_some(out)
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    let b = data.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([b[0], b[1]]))
}

fn int_align(n: usize) -> usize {
    (n + 3) & !3
}

/// A container: its header, its entries, and the data after them.
struct Container<'a> {
    data: &'a [u8],
    count: usize,
    object: bool,
    /// Where the entries' data starts (after the header and the entries).
    base: usize,
}

impl<'a> Container<'a> {
    fn new(data: &'a [u8]) -> Option<Self> {
        let header = u32_at(data, 0)?;
        let object = header & JB_FOBJECT != 0;
        if object == (header & JB_FARRAY != 0) {
            return None;
        }
        let count = (header & JB_CMASK) as usize;
        let entries = if object { count.checked_mul(2)? } else { count };
        let base = entries.checked_mul(4)?.checked_add(4)?;
        if base > data.len() {
            return None;
        }
        Some(Container {
            data,
            count,
            object,
            base,
        })
    }

    fn entry(&self, i: usize) -> u32 {
        // (i below the entries' count: the header's length was checked in new)
        u32_at(self.data, 4 + 4 * i).unwrap_or_default()
    }

    /// Where entry `i`'s data starts, relative to `base` (PostgreSQL's getJsonbOffset: the
    /// lengths back to the last entry that stores its end offset instead).
    fn offset(&self, i: usize) -> usize {
        let mut offset = 0usize;
        for j in (0..i).rev() {
            let e = self.entry(j);
            offset = offset.wrapping_add((e & JENTRY_OFFLENMASK) as usize);
            if e & JENTRY_HAS_OFF != 0 {
                break;
            }
        }
        offset
    }

    /// Entries `from..`, in order: (type, start, length), starts relative to `base`.
    fn entries(&self, from: usize) -> Entries<'_, 'a> {
        Entries {
            c: self,
            i: from,
            offset: self.offset(from),
        }
    }

    /// Print the value of an entry.
    fn value(
        &self,
        kind: u32,
        start: usize,
        len: usize,
        out: &mut String,
        depth: usize,
    ) -> Option<()> {
        let end = self.base.checked_add(start)?.checked_add(len)?;
        if end > self.data.len() {
            return None;
        }
        match kind {
            JENTRY_ISSTRING => escape(
                std::str::from_utf8(&self.data[self.base + start..end]).ok()?,
                out,
            ),
            JENTRY_ISNUMERIC => numeric(self.data.get(self.base + int_align(start)..end)?, out),
            JENTRY_ISBOOL_FALSE => {
                out.push_str("false");
                Some(())
            }
            JENTRY_ISBOOL_TRUE => {
                out.push_str("true");
                Some(())
            }
            JENTRY_ISNULL => {
                out.push_str("null");
                Some(())
            }
            JENTRY_ISCONTAINER => container(
                self.data.get(self.base + int_align(start)..end)?,
                out,
                depth + 1,
            ),
            _ => None,
        }
    }
}

struct Entries<'c, 'a> {
    c: &'c Container<'a>,
    i: usize,
    offset: usize,
}

impl Iterator for Entries<'_, '_> {
    type Item = Option<(u32, usize, usize)>;
    fn next(&mut self) -> Option<Self::Item> {
        let total = if self.c.object {
            self.c.count * 2
        } else {
            self.c.count
        };
        if self.i >= total {
            return None;
        }
        let e = self.c.entry(self.i);
        let field = (e & JENTRY_OFFLENMASK) as usize;
        let end = if e & JENTRY_HAS_OFF != 0 {
            field
        } else {
            self.offset.wrapping_add(field)
        };
        let start = self.offset;
        self.i += 1;
        self.offset = end;
        Some((end >= start).then_some((e & JENTRY_TYPEMASK, start, end - start)))
    }
}

/// Print a container (`{"k": v, ...}` or `[v, ...]`).
fn container(data: &[u8], out: &mut String, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let c = Container::new(data)?;
    if u32_at(data, 0)? & JB_FSCALAR != 0 {
        return None;
    }
    if c.object {
        out.push('{');
        let keys = c.entries(0).take(c.count);
        let values = c.entries(c.count);
        for (n, (k, v)) in keys.zip(values).enumerate() {
            let (kk, ks, kl) = k?;
            let (vk, vs, vl) = v?;
            if kk != JENTRY_ISSTRING {
                return None;
            }
            if n > 0 {
                out.push_str(", ");
            }
            c.value(kk, ks, kl, out, depth)?;
            out.push_str(": ");
            c.value(vk, vs, vl, out, depth)?;
            if out.len() > MAX_LEN {
                return None;
            }
        }
        out.push('}');
    } else {
        out.push('[');
        for (n, e) in c.entries(0).enumerate() {
            let (k, s, l) = e?;
            if n > 0 {
                out.push_str(", ");
            }
            c.value(k, s, l, out, depth)?;
            if out.len() > MAX_LEN {
                return None;
            }
        }
        out.push(']');
    }
    Some(())
}

/// A JSON string, quoted and escaped as PostgreSQL's `escape_json` does.
fn escape(s: &str, out: &mut String) -> Option<()> {
    out.push('"');
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            0 => return None,
            0x08 => "\\b",
            0x0C => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b if b < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[from..i]);
        if esc.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(esc);
        }
        from = i + 1;
    }
    out.push_str(&s[from..]);
    out.push('"');
    Some(())
}

/// A `numeric` (a varlena, header included) printed as `numeric_out` does.
fn numeric(v: &[u8], out: &mut String) -> Option<()> {
    // the varlena header: 4 bytes (uncompressed) or 1 (short)
    let first = *v.first()?;
    let (size, body) = if first & 0x03 == 0 {
        ((u32_at(v, 0)? >> 2) as usize, 4)
    } else if first & 0x01 == 1 && first != 1 {
        ((first >> 1) as usize, 1)
    } else {
        return None;
    };
    let v = v.get(body..size)?;
    let head = u16_at(v, 0)?;
    let (negative, dscale, weight, digits_at) = match head & 0xC000 {
        // short: sign, display scale and weight in the one header word
        0x8000 => {
            let weight = if head & 0x0040 != 0 {
                !0x3Fi32 | i32::from(head & 0x3F)
            } else {
                i32::from(head & 0x3F)
            };
            (
                head & 0x2000 != 0,
                usize::from((head & 0x1F80) >> 7),
                weight,
                2,
            )
        }
        // NaN and the infinities: not in jsonb
        0xC000 => return None,
        sign => (
            sign == 0x4000,
            usize::from(head & 0x3FFF),
            i32::from(u16_at(v, 2)? as i16),
            4,
        ),
    };
    let raw = v.get(digits_at..)?;
    if raw.len() % 2 != 0 {
        return None;
    }
    let count = raw.len() / 2;
    let at = |i: usize| u16::from_ne_bytes([raw[2 * i], raw[2 * i + 1]]);
    if (0..count).any(|i| at(i) > 9999) {
        return None;
    }
    // (the digits printed: at most 4 per base-10000 digit before the point, and dscale)
    let before = if weight >= 0 {
        4 * (weight as usize + 1)
    } else {
        1
    };
    if before + dscale > MAX_LEN {
        return None;
    }
    let digit = |d: i32| -> u16 {
        if d >= 0 && (d as usize) < count {
            at(d as usize)
        } else {
            0
        }
    };
    if negative {
        out.push('-');
    }
    // the digits before the point, the first without its leading zeroes
    let mut d: i32;
    if weight < 0 {
        d = weight + 1;
        out.push('0');
    } else {
        d = 0;
        while d <= weight {
            let dig = digit(d);
            if d == 0 {
                // without its leading zeroes
                let mut p = 1000;
                while p > 1 && dig < p {
                    p /= 10;
                }
                while p > 0 {
                    out.push(char::from(b'0' + (dig / p % 10) as u8));
                    p /= 10;
                }
            } else {
                push4(dig, out);
            }
            d += 1;
        }
    }
    // the point and dscale digits after it
    if dscale > 0 {
        out.push('.');
        let end = out.len() + dscale;
        while out.len() < end {
            push4(digit(d), out);
            d += 1;
        }
        out.truncate(end);
    }
    Some(())
}

/// A base-10000 digit as its four decimal digits.
fn push4(dig: u16, out: &mut String) {
    for p in [1000, 100, 10, 1] {
        out.push(char::from(b'0' + (dig / p % 10) as u8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A jsonb's bytes (after the varlena header), built as PostgreSQL's convertToJsonb does.
    enum V {
        Null,
        Bool(bool),
        Str(&'static str),
        /// a numeric's bytes, varlena header included
        Num(Vec<u8>),
        Arr(Vec<V>),
        Obj(Vec<(&'static str, V)>),
    }

    fn pad(buf: &mut Vec<u8>) -> usize {
        // aligned as in the whole varlena, whose 4-byte header is not in buf
        let mut n = 0;
        while (buf.len() + 4) % 4 != 0 {
            buf.push(0);
            n += 1;
        }
        n
    }

    fn convert(buf: &mut Vec<u8>, v: &V) -> u32 {
        match v {
            V::Null => JENTRY_ISNULL,
            V::Bool(b) => {
                if *b {
                    JENTRY_ISBOOL_TRUE
                } else {
                    JENTRY_ISBOOL_FALSE
                }
            }
            V::Str(s) => {
                buf.extend_from_slice(s.as_bytes());
                JENTRY_ISSTRING | s.len() as u32
            }
            V::Num(n) => {
                let p = pad(buf);
                buf.extend_from_slice(n);
                JENTRY_ISNUMERIC | (p + n.len()) as u32
            }
            V::Arr(_) | V::Obj(_) => {
                let start = buf.len();
                pad(buf);
                container_into(buf, v, false);
                JENTRY_ISCONTAINER | (buf.len() - start) as u32
            }
        }
    }

    fn container_into(buf: &mut Vec<u8>, v: &V, scalar: bool) {
        let children: Vec<&V> = match v {
            V::Arr(a) => a.iter().collect(),
            V::Obj(o) => o.iter().map(|(_, v)| v).collect(),
            other => vec![other],
        };
        let keys: Vec<V> = match v {
            V::Obj(o) => o.iter().map(|(k, _)| V::Str(k)).collect(),
            _ => vec![],
        };
        let header = match v {
            V::Obj(o) => JB_FOBJECT | o.len() as u32,
            _ if scalar => JB_FARRAY | JB_FSCALAR | 1,
            V::Arr(a) => JB_FARRAY | a.len() as u32,
            _ => unreachable!(),
        };
        buf.extend_from_slice(&header.to_ne_bytes());
        let all: Vec<&V> = keys.iter().chain(children).collect();
        let at = buf.len();
        buf.resize(at + 4 * all.len(), 0);
        let mut total = 0u32;
        for (i, c) in all.iter().enumerate() {
            let meta = convert(buf, c);
            total += meta & JENTRY_OFFLENMASK;
            let meta = if i % 32 == 0 {
                (meta & JENTRY_TYPEMASK) | total | JENTRY_HAS_OFF
            } else {
                meta
            };
            buf[at + 4 * i..at + 4 * i + 4].copy_from_slice(&meta.to_ne_bytes());
        }
    }

    fn jsonb(v: &V) -> Vec<u8> {
        let mut buf = Vec::new();
        let scalar = !matches!(v, V::Arr(_) | V::Obj(_));
        container_into(&mut buf, v, scalar);
        buf
    }

    /// A long-format numeric: sign, display scale, weight, base-10000 digits.
    fn num(negative: bool, dscale: u16, weight: i16, digits: &[u16]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&((if negative { 0x4000 } else { 0 }) | dscale).to_ne_bytes());
        body.extend_from_slice(&weight.to_ne_bytes());
        for d in digits {
            body.extend_from_slice(&d.to_ne_bytes());
        }
        let mut v = (((body.len() + 4) as u32) << 2).to_ne_bytes().to_vec();
        v.extend_from_slice(&body);
        v
    }

    /// A short-format numeric.
    fn short(negative: bool, dscale: u16, weight: i16, digits: &[u16]) -> Vec<u8> {
        let w = (weight as u16) & 0x7F;
        let head = 0x8000 | (if negative { 0x2000 } else { 0 }) | (dscale << 7) | w;
        let mut body = head.to_ne_bytes().to_vec();
        for d in digits {
            body.extend_from_slice(&d.to_ne_bytes());
        }
        let mut v = (((body.len() + 4) as u32) << 2).to_ne_bytes().to_vec();
        v.extend_from_slice(&body);
        v
    }

    #[test]
    fn prints_as_jsonb_out() {
        let cases: Vec<(V, &str)> = vec![
            (
                V::Obj(vec![("ticket", V::Num(short(false, 0, 0, &[42])))]),
                r#"{"ticket": 42}"#,
            ),
            (V::Arr(vec![]), "[]"),
            (V::Obj(vec![]), "{}"),
            (V::Null, "null"),
            (V::Bool(true), "true"),
            (V::Str("a\"b\\c\n\t\u{1}é"), r#""a\"b\\c\n\t\u0001é""#),
            (V::Num(short(true, 2, 0, &[1, 5000])), "-1.50"),
            (V::Num(short(false, 4, -1, &[15])), "0.0015"),
            (V::Num(num(false, 0, 2, &[1, 0, 0])), "100000000"),
            (V::Num(num(false, 3, 0, &[])), "0.000"),
            (V::Num(num(true, 5, 1, &[12, 3456, 7800])), "-123456.78000"),
            (
                V::Obj(vec![
                    (
                        "a",
                        V::Arr(vec![
                            V::Num(short(false, 0, 0, &[1])),
                            V::Obj(vec![("b", V::Null)]),
                        ]),
                    ),
                    ("cc", V::Bool(false)),
                ]),
                r#"{"a": [1, {"b": null}], "cc": false}"#,
            ),
        ];
        for (v, text) in cases {
            assert_eq!(to_text(&jsonb(&v)).as_deref(), Some(text));
        }
    }

    #[test]
    fn reads_entries_past_an_offset_stride() {
        // 70 elements: entries 0, 32 and 64 hold end offsets, the others lengths
        let v = V::Arr(
            (0..70)
                .map(|i| {
                    if i % 2 == 0 {
                        V::Str("xy")
                    } else {
                        V::Num(short(false, 0, 0, &[i]))
                    }
                })
                .collect(),
        );
        let expected = format!(
            "[{}]",
            (0..70)
                .map(|i| if i % 2 == 0 {
                    "\"xy\"".to_string()
                } else {
                    i.to_string()
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(to_text(&jsonb(&v)).as_deref(), Some(expected.as_str()));
    }

    #[test]
    fn malformed_or_deep_is_none() {
        assert_eq!(to_text(&[]), None);
        assert_eq!(to_text(&[1, 0, 0]), None);
        let good = jsonb(&V::Arr(vec![V::Str("abc")]));
        for cut in 0..good.len() {
            assert_eq!(to_text(&good[..cut]), None, "cut at {cut}");
        }
        let mut deep = V::Arr(vec![]);
        for _ in 0..MAX_DEPTH + 1 {
            deep = V::Arr(vec![deep]);
        }
        assert_eq!(to_text(&jsonb(&deep)), None);
    }

    #[test]
    fn text_past_max_len_is_none() {
        // a numeric of one base-10000 digit at weight 32,767 prints 131,069 digits: eight of
        // them in an array fit in MAX_LEN, nine do not (jsonb_out, in PostgreSQL's memory, is
        // asked for those)
        let big = || V::Num(num(false, 0, 32767, &[1]));
        let one = to_text(&jsonb(&V::Arr(vec![big()]))).map(|t| t.len());
        assert_eq!(one, Some(2 + 1 + 4 * 32767));
        let array = |n| jsonb(&V::Arr((0..n).map(|_| big()).collect()));
        assert!(to_text(&array(8)).is_some());
        assert_eq!(to_text(&array(9)), None);
    }

    proptest::proptest! {
        /// Whatever the bytes, an answer or `None`, never a panic (the bytes come from the
        /// database, where a bug elsewhere could leave anything).
        #[test]
        fn any_bytes_or_any_byte_changed(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            at in 0usize..200,
            to in proptest::prelude::any::<u8>(),
        ) {
            let _ = to_text(&bytes);
            let mut good = jsonb(&V::Obj(vec![
                ("a", V::Arr(vec![V::Num(short(false, 2, 0, &[7, 2500])), V::Str("x\ny")])),
                ("b", V::Obj(vec![("c", V::Num(num(true, 0, 1, &[3, 4])))])),
            ]));
            let n = good.len();
            good[at % n] = to;
            let _ = to_text(&good);
        }
    }
}
