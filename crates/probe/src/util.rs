//! Small helpers shared by the parsers and the reader.

use crate::error::{ParseError, ProbeError};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Parses a decimal u64, naming the line on failure (including overflow).
pub fn parse_u64(s: &str, line: usize, what: &str) -> Result<u64, ParseError> {
    s.parse::<u64>().map_err(|e| {
        ParseError::new(
            line,
            format!("{what}: cannot read '{s}' as an unsigned integer ({e})"),
        )
    })
}

/// Parses a decimal i64 (some files, such as zram's mem_limit, may hold signed values).
pub fn parse_i64(s: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    s.parse::<i64>().map_err(|e| {
        ParseError::new(
            line,
            format!("{what}: cannot read '{s}' as an integer ({e})"),
        )
    })
}

/// Multiplies kibibytes to bytes, failing on u64 overflow instead of wrapping.
pub fn kib_to_bytes(v: u64, line: usize, key: &str) -> Result<u64, ParseError> {
    v.checked_mul(1024)
        .ok_or_else(|| ParseError::new(line, format!("{key}: {v} kB overflows a byte count")))
}

/// Parses "key value" lines (vmstat, memory.stat, memory.events) into a map.
/// Blank lines are skipped; any other line must have exactly two fields.
pub fn parse_flat_keyed(text: &str) -> Result<BTreeMap<String, u64>, ParseError> {
    let mut map = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut it = line.split_ascii_whitespace();
        let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
            return Err(ParseError::new(
                n,
                format!("expected 'key value', found '{line}'"),
            ));
        };
        map.insert(k.to_string(), parse_u64(v, n, k)?);
    }
    Ok(map)
}

/// Reads a whole file into `buf`. `Ok(false)` when the file does not exist (or the
/// kernel says the device or process is gone), which callers turn into `None`.
pub fn read_into(path: &Path, buf: &mut String) -> Result<bool, ProbeError> {
    buf.clear();
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if is_missing(&e) => return Ok(false),
        Err(source) => {
            return Err(ProbeError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    match f.read_to_string(buf) {
        Ok(_) => Ok(true),
        Err(e) if is_missing(&e) => Ok(false),
        Err(source) => Err(ProbeError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads and parses an optional file: missing gives `Ok(None)`.
pub fn read_parse<T>(
    path: &Path,
    buf: &mut String,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
) -> Result<Option<T>, ProbeError> {
    if !read_into(path, buf)? {
        return Ok(None);
    }
    parse(buf).map(Some).map_err(|source| ProbeError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

fn is_missing(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::ESRCH) | Some(libc::ENODEV) | Some(libc::ENOTDIR)
    )
}

/// Parses a file that holds one unsigned number (memory.current, disksize, ...).
pub fn parse_single_u64(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ParseError::new(0, "empty file, expected a number"));
    }
    parse_u64(t, 1, "value")
}
