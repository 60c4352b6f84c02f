//! Reading a run's JSONL files (samples.jsonl, events.jsonl) in bounded
//! memory: lines longer or heavier than any a run writes are skipped unheld,
//! and a long file is thinned evenly as it is read, by count and by weight
//! ([`crate::weight`]).

use crate::rundir::{MAX_JSONL_BYTES, ReadError, open_regular};
use crate::weight::{Budget, MAX_FILE_WEIGHT, MAX_LINE_WEIGHT, Weigh, estimate};
use std::path::Path;

/// The most bytes of unusable lines read from one JSONL file before the
/// rest of it is left unread (a run writes none, bar a torn last line).
const MAX_UNREADABLE: usize = 64 << 20;

/// The longest line pagelab parses from a JSONL file (a sample is a few KiB);
/// a longer one is skipped as unreadable without being held.
pub(crate) const MAX_LINE: usize = 4 << 20;

/// What [`read_jsonl`] read: the values kept, the unreadable lines, and when
/// thinned, how many values the file held.
type Jsonl<T> = (Vec<T>, usize, Option<usize>);

/// Reads a JSONL file line by line: at most `cap` values kept (every k-th,
/// k doubling each time the kept ones pass 2 × `cap` or weigh more than
/// [`MAX_FILE_WEIGHT`]), with the same checks as
/// [`crate::rundir::read_bounded`]. A line whose [`estimate`] passes
/// [`MAX_LINE_WEIGHT`] is skipped before it is parsed. What is kept is charged
/// to `budget`. Returns the values, the unreadable lines and, when thinned, how
/// many values the file held.
pub(crate) fn read_jsonl<T: serde::de::DeserializeOwned + Weigh>(
    path: &Path,
    cap: usize,
    budget: &Budget,
) -> Result<Option<Jsonl<T>>, ReadError> {
    use std::io::{BufRead, Read};
    let io_err = |source| ReadError::Io { path: path.to_path_buf(), source };
    let Some(f) = open_regular(path)? else { return Ok(None) };
    let mut r = std::io::BufReader::with_capacity(1 << 16, f.take(MAX_JSONL_BYTES));
    let (mut out, mut skipped, mut seen, mut stride) = (Vec::<(T, usize)>::new(), 0usize, 0usize, 1usize);
    let mut kept = 0usize;
    // The last value is always kept (totals run from the first to the last).
    let mut last: Option<(T, usize)> = None;
    let mut line: Vec<u8> = Vec::new();
    let mut too_long = false;
    // Bytes of lines that could not be used: past MAX_UNREADABLE the rest of
    // the file is not read (a sparse 4 GiB file of zeros took 20 s).
    let mut unreadable = 0usize;
    loop {
        let buf = r.fill_buf().map_err(io_err)?;
        if buf.is_empty() && line.is_empty() && !too_long {
            break;
        }
        let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let eof = buf.is_empty();
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = end.unwrap_or(chunk.len());
        r.consume(used);
        if too_long {
            unreadable += used;
            if unreadable > MAX_UNREADABLE {
                skipped += 1;
                break;
            }
        }
        if end.is_none() && !eof {
            continue;
        }
        // A whole line (or the last, unterminated one).
        if too_long {
            skipped += 1;
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            let parsed = if estimate(&line).saturating_add(size_of::<T>()) > MAX_LINE_WEIGHT {
                None
            } else {
                serde_json::from_slice::<T>(&line).ok()
            };
            match parsed {
                Some(v) => {
                    let w = v.weight();
                    if seen % stride == 0 {
                        while out.len() >= 2 && (out.len() >= 2 * cap || kept + w > MAX_FILE_WEIGHT) {
                            // Keep every other one (indices 0, 2s, 4s, …): the stride doubles.
                            let mut i = 0;
                            out.retain(|_| {
                                i += 1;
                                i % 2 == 1
                            });
                            kept = out.iter().map(|(_, w)| w).sum();
                            stride *= 2;
                            if seen % stride != 0 {
                                break;
                            }
                        }
                    }
                    if seen % stride == 0 && kept + w <= MAX_FILE_WEIGHT {
                        out.push((v, w));
                        kept += w;
                        last = None;
                    } else {
                        last = Some((v, w));
                    }
                    seen += 1;
                }
                None => {
                    skipped += 1;
                    unreadable += line.len();
                    if unreadable > MAX_UNREADABLE {
                        break;
                    }
                }
            }
        }
        line.clear();
        too_long = false;
        if eof {
            break;
        }
    }
    out.extend(last);
    budget.charge(path, out.iter().map(|(_, w)| w).sum())?;
    Ok(Some((out.into_iter().map(|(v, _)| v).collect(), skipped, (stride > 1).then_some(seen))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    #[test]
    fn a_long_jsonl_is_thinned_evenly_and_a_huge_line_is_skipped_unheld() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("samples.jsonl");
        let mut f = std::io::BufWriter::new(File::create(&p).unwrap());
        for i in 0..45_000u64 {
            writeln!(f, "{{\"i\":{i}}}").unwrap();
            if i == 100 {
                // One line longer than any sample, and one that is not JSON.
                writeln!(f, "{}", "x".repeat(MAX_LINE + 10)).unwrap();
                writeln!(f, "{{torn").unwrap();
            }
        }
        write!(f, "{{\"i\":").unwrap();
        drop(f);
        let (v, skipped, thinned) = read_jsonl::<serde_json::Value>(&p, 20_000, &Budget::default()).unwrap().unwrap();
        assert_eq!(skipped, 3, "the long line, the torn one and the unterminated last");
        assert_eq!(thinned, Some(45_000));
        assert!(v.len() >= 20_000 && v.len() < 40_000, "{}", v.len());
        // Evenly: the kept values step by the same stride from the first.
        let idx: Vec<u64> = v.iter().map(|x| x["i"].as_u64().unwrap()).collect();
        let stride = idx[1] - idx[0];
        let body = &idx[..idx.len() - 1];
        assert!(stride >= 2 && body.windows(2).all(|w| w[1] - w[0] == stride), "stride {stride}");
        // The first and the last are kept.
        assert_eq!((idx[0], *idx.last().unwrap()), (0, 44_999));
        // Whatever the count, the first and last are kept, the rest evenly.
        for n in [19u64, 20, 21, 40, 41, 1000] {
            let text: String = (0..n).map(|i| format!("{{\"i\":{i}}}\n")).collect();
            std::fs::write(&p, text).unwrap();
            let (v, _, _) = read_jsonl::<serde_json::Value>(&p, 10, &Budget::default()).unwrap().unwrap();
            let idx: Vec<u64> = v.iter().map(|x| x["i"].as_u64().unwrap()).collect();
            assert_eq!((idx[0], *idx.last().unwrap()), (0, n - 1), "{n}: {idx:?}");
            assert!(idx.len() <= 21, "{n}: {}", idx.len());
            let s = idx[1] - idx[0];
            assert!(idx[..idx.len() - 1].windows(2).all(|w| w[1] - w[0] == s), "{n}: {idx:?}");
        }
        // 100 MiB of zeros (a sparse file, no newline), then a good line: the
        // rest is left unread once 64 MiB could not be used (a sparse 4 GiB
        // file took 20 s to read through).
        let z = d.path().join("zeros.jsonl");
        let mut f = File::create(&z).unwrap();
        f.set_len(100 << 20).unwrap();
        std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0)).unwrap();
        f.write_all(b"\n{\"i\":1}\n").unwrap();
        drop(f);
        let (v, skipped, _) = read_jsonl::<serde_json::Value>(&z, 10, &Budget::default()).unwrap().unwrap();
        assert_eq!((v.len(), skipped), (0, 1), "the line after 100 MiB of unusable bytes is not read");
        // A short file is read whole.
        std::fs::write(&p, "{\"i\":1}\n\n{\"i\":2}\n").unwrap();
        let (v, skipped, thinned) = read_jsonl::<serde_json::Value>(&p, 20_000, &Budget::default()).unwrap().unwrap();
        assert_eq!((v.len(), skipped, thinned), (2, 0, None));
        assert!(read_jsonl::<serde_json::Value>(&d.path().join("none"), 10, &Budget::default()).unwrap().is_none());
    }
}
