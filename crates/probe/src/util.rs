//! Small helpers shared by the parsers and the reader.

use crate::counters::{Counters, Keys};
use crate::error::{ParseError, ProbeError};
use std::io::Read;
use std::path::Path;

/// Parses a decimal u64, naming the line on failure (including overflow).
pub fn parse_u64(s: &str, line: usize, what: &str) -> Result<u64, ParseError> {
    s.parse::<u64>()
        .map_err(|e| ParseError::new(line, format!("{what}: cannot read '{s}' as an unsigned integer ({e})")))
}

/// Parses a decimal i64 (some files, such as zram's mem_limit, may hold signed values).
pub fn parse_i64(s: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    s.parse::<i64>().map_err(|e| ParseError::new(line, format!("{what}: cannot read '{s}' as an integer ({e})")))
}

/// Multiplies kibibytes to bytes, failing on u64 overflow instead of wrapping.
pub fn kib_to_bytes(v: u64, line: usize, key: &str) -> Result<u64, ParseError> {
    v.checked_mul(1024).ok_or_else(|| ParseError::new(line, format!("{key}: {v} kB overflows a byte count")))
}

/// Parses "key value" lines (vmstat, memory.stat, memory.events) into counters.
/// Blank lines are skipped; any other line must have exactly two fields.
pub fn parse_flat_keyed(text: &str) -> Result<Counters, ParseError> {
    parse_flat_keyed_with(text, None)
}

/// [`parse_flat_keyed`], reusing the key table of a previous read.
pub fn parse_flat_keyed_with(text: &str, prev: Option<&Keys>) -> Result<Counters, ParseError> {
    crate::counters::parse_lines(text, prev, |line, n| {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let mut it = line.split_ascii_whitespace();
        let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
            return Err(ParseError::new(n, format!("expected 'key value', found '{line}'")));
        };
        Ok(Some((k, parse_u64(v, n, k)?)))
    })
}

/// Reads a whole file into `buf`. `Ok(false)` when the file does not exist (or the
/// kernel says the device or process is gone), which callers turn into `None`.
pub fn read_into(path: &Path, buf: &mut String) -> Result<bool, ProbeError> {
    buf.clear();
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if is_missing(&e) => return Ok(false),
        Err(source) => {
            return Err(ProbeError::Io { path: path.to_path_buf(), source });
        }
    };
    match f.read_to_string(buf) {
        Ok(_) => Ok(true),
        Err(e) if is_missing(&e) => Ok(false),
        Err(source) => Err(ProbeError::Io { path: path.to_path_buf(), source }),
    }
}

fn is_missing(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH) | Some(libc::ENODEV) | Some(libc::ENOTDIR))
}

/// Parses a file that holds one unsigned number (memory.current, disksize, ...).
pub fn parse_single_u64(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ParseError::new(0, "empty file, expected a number"));
    }
    parse_u64(t, 1, "value")
}

/// Reads kernel files into a reused buffer, keeping them open between reads.
///
/// procfs, sysfs and cgroupfs files are seq_files: a `pread` at offset 0
/// regenerates their content, so an open descriptor can be read again and again.
/// That saves the path walk and the open/close of every file on every sample,
/// which is most of the kernel's cost at short intervals. A cached descriptor that
/// fails (its process exited, its cgroup was removed) is dropped and the path is
/// opened afresh, so a reused pid or a recreated cgroup is read correctly.
#[derive(Debug, Default)]
pub struct FileReader {
    pub text: String,
    open: Vec<(std::path::PathBuf, std::fs::File)>,
}

/// Descriptors kept open at most; beyond it the cache starts over.
const MAX_OPEN: usize = 64;

impl FileReader {
    pub fn new() -> Self {
        FileReader { text: String::with_capacity(16 * 1024), open: Vec::new() }
    }

    fn pread_all(f: &std::fs::File, out: &mut Vec<u8>) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        out.clear();
        let mut off = 0u64;
        loop {
            if out.capacity() - out.len() < 4096 {
                out.reserve(8192);
            }
            let spare = out.capacity() - out.len();
            let start = out.len();
            out.resize(start + spare, 0);
            let n = f.read_at(&mut out[start..], off)?;
            out.truncate(start + n);
            if n == 0 {
                return Ok(());
            }
            off += n as u64;
        }
    }

    /// Reads `path` into `self.text`. `Ok(false)` when it is missing.
    pub fn read(&mut self, path: &Path) -> Result<bool, ProbeError> {
        let mut bytes = std::mem::take(&mut self.text).into_bytes();
        let r = self.read_bytes(path, &mut bytes);
        self.text = String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        r
    }

    fn read_bytes(&mut self, path: &Path, bytes: &mut Vec<u8>) -> Result<bool, ProbeError> {
        if let Some(i) = self.open.iter().position(|(p, _)| p == path) {
            if Self::pread_all(&self.open[i].1, bytes).is_ok() && !bytes.is_empty() {
                return Ok(true);
            }
            self.open.swap_remove(i);
        }
        let f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if is_missing(&e) => return Ok(false),
            Err(source) => return Err(ProbeError::Io { path: path.to_path_buf(), source }),
        };
        match Self::pread_all(&f, bytes) {
            Ok(()) => {}
            Err(e) if is_missing(&e) => return Ok(false),
            Err(source) => return Err(ProbeError::Io { path: path.to_path_buf(), source }),
        }
        if self.open.len() >= MAX_OPEN {
            self.open.clear();
        }
        self.open.push((path.to_path_buf(), f));
        Ok(true)
    }
}

/// Reads and parses an optional file through a [`FileReader`]: missing gives `Ok(None)`.
pub fn read_parse<T>(
    path: &Path,
    r: &mut FileReader,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
) -> Result<Option<T>, ProbeError> {
    if !r.read(path)? {
        return Ok(None);
    }
    parse(&r.text).map(Some).map_err(|source| ProbeError::Parse { path: path.to_path_buf(), source })
}
