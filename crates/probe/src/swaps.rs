//! `/proc/swaps`: active swap areas, sizes in KiB in the file, bytes here.

use crate::error::ParseError;
use crate::util::{kib_to_bytes, parse_i64, parse_u64};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwapArea {
    /// Device or file path. The kernel escapes spaces as `\040`; they are unescaped here.
    pub filename: String,
    /// `partition` or `file`.
    pub kind: String,
    pub size_bytes: u64,
    pub used_bytes: u64,
    pub priority: i64,
}

fn unescape(s: &str) -> String {
    // The kernel uses octal escapes (\040 for space, \011 tab, \012 newline, \134 backslash).
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Three octal digits make a byte only up to \377; "\777" (which no
        // kernel writes) overflowed a u8 here, found by fuzzing. It stays literal.
        let octal = b.get(i + 1..i + 4).filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        let value = octal.map(|d| d.iter().fold(0u16, |v, c| v * 8 + (c - b'0') as u16));
        if b[i] == b'\\'
            && let Some(v) = value.and_then(|v| u8::try_from(v).ok())
        {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse(text: &str) -> Result<Vec<SwapArea>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if i == 0 {
            if !line.starts_with("Filename") {
                return Err(ParseError::new(
                    1,
                    format!("expected the 'Filename Type Size Used Priority' header, found '{line}'"),
                ));
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let [name, kind, size, used, prio] = f.as_slice() else {
            return Err(ParseError::new(n, format!("expected 5 fields, found {}: '{line}'", f.len())));
        };
        out.push(SwapArea {
            filename: unescape(name),
            kind: kind.to_string(),
            size_bytes: kib_to_bytes(parse_u64(size, n, "Size")?, n, "Size")?,
            used_bytes: kib_to_bytes(parse_u64(used, n, "Used")?, n, "Used")?,
            priority: parse_i64(prio, n, "Priority")?,
        });
    }
    Ok(out)
}

pub fn unescape_path(s: &str) -> String {
    unescape(s)
}

#[cfg(test)]
mod tests {
    #[test]
    fn octal_escapes_up_to_377_only() {
        assert_eq!(super::unescape(r"/swap\040file"), "/swap file");
        assert_eq!(super::unescape(r"a\134b"), r"a\b");
        // Not a byte: kept as written (it overflowed a u8 before; found by fuzzing).
        assert_eq!(super::unescape(r"x\777"), r"x\777");
        assert_eq!(super::unescape(r"tail\04"), r"tail\04");
    }
}
