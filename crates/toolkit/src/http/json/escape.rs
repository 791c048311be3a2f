//! Text as JSON strings, escaped exactly as `serde_json` escapes it.

/// Writes text into a JSON string, escaped (for `collect_str`).
struct Escaping<'w>(&'w mut Vec<u8>);

impl std::fmt::Write for Escaping<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        write_contents(self.0, s);
        Ok(())
    }
}

/// `value`'s `Display` text as a JSON string (`collect_str`, of values and
/// of object keys alike).
pub(super) fn write_display<T: std::fmt::Display + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    use std::fmt::Write;
    out.push(b'"');
    write!(Escaping(out), "{value}").map_err(serde::ser::Error::custom)?;
    out.push(b'"');
    Ok(())
}

/// `s` as a JSON string.
pub(super) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    if any_to_escape(s.as_bytes()) {
        write_contents(out, s);
    } else {
        out.extend_from_slice(s.as_bytes());
    }
    out.push(b'"');
}

/// A struct field's name and its colon, `"name":`. Field names are
/// identifiers of our own types, which never need escaping.
pub(super) fn write_field_name(out: &mut Vec<u8>, name: &'static str) {
    debug_assert!(
        !any_to_escape(name.as_bytes()),
        "the field name {name:?} needs escaping"
    );
    out.reserve(name.len() + 3);
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Whether any byte of `bytes` must be escaped, looked at as whole
/// words: the last one overlaps the one before it, and a string shorter
/// than a word is read as two overlapping halves, so no byte is looked at
/// alone (most strings are field names a dozen bytes long).
fn any_to_escape(bytes: &[u8]) -> bool {
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
    let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"));
    if n >= 8 {
        let mut at = 0;
        while at + 8 <= n {
            if needs_escape(word(at)) {
                return true;
            }
            at += 8;
        }
        at < n && needs_escape(word(n - 8))
    } else if n >= 4 {
        needs_escape(u64::from(half(0)) | u64::from(half(n - 4)) << 32)
    } else {
        bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `word` must be escaped: a control
/// character (below 0x20), `"` or `\`. (Bytes of multi-byte characters
/// have the high bit set and never match.)
fn needs_escape(word: u64) -> bool {
    // The word-at-a-time test for a byte below a value (`v - n * ONES & !v`
    // has a high bit set only if some byte of `v` is below `n`), for bytes
    // below 0x20 and for zero bytes once `"` or `\` is XORed away; the
    // three are joined before the one mask.
    let zero_in = |v: u64, below: u64| v.wrapping_sub(below) & !v;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (zero_in(word, ONES * 0x20) | zero_in(quote, ONES) | zero_in(backslash, ONES)) & HIGH != 0
}

/// `s` escaped as `serde_json` escapes it: `\"`, `\\`, the five short
/// escapes of control characters and `\u00XX` (lower-case) for the rest.
fn write_contents(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let byte = bytes[i];
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0A => b'n',
            0x0C => b'f',
            0x0D => b'r',
            0x00..=0x1F => 0,
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        if short == 0 {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xF)]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
}
