//! Pressure stall information: `/proc/pressure/{memory,cpu,io}` and a cgroup's
//! `memory.pressure` (Documentation/accounting/psi.rst).
//!
//! ```text
//! some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```

use crate::error::ParseError;
use crate::util::parse_u64;
use serde::{Deserialize, Serialize};

/// One PSI line: running averages in percent, and the cumulative stall time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Cumulative stall time, microseconds.
    pub total_us: u64,
}

/// A pressure file. `full` is absent on old kernels' cpu file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub some: PsiLine,
    pub full: Option<PsiLine>,
}

fn parse_line(fields: &[&str], n: usize) -> Result<PsiLine, ParseError> {
    let mut out = PsiLine::default();
    let mut seen = 0u8;
    for f in fields {
        let Some((k, v)) = f.split_once('=') else {
            return Err(ParseError::new(n, format!("expected key=value, found '{f}'")));
        };
        let avg = |v: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| ParseError::new(n, format!("{k}: cannot read '{v}' as a percentage")))
        };
        // One bit per key: a count overflowed on 256 repeats (found by fuzzing
        // with debug assertions), and four repeats of one key passed as all four.
        seen |= match k {
            "avg10" => {
                out.avg10 = avg(v)?;
                1
            }
            "avg60" => {
                out.avg60 = avg(v)?;
                2
            }
            "avg300" => {
                out.avg300 = avg(v)?;
                4
            }
            "total" => {
                out.total_us = parse_u64(v, n, "total")?;
                8
            }
            _ => 0,
        };
    }
    if seen != 15 {
        return Err(ParseError::new(n, "expected avg10, avg60, avg300 and total"));
    }
    Ok(out)
}

pub fn parse(text: &str) -> Result<Pressure, ParseError> {
    let mut some = None;
    let mut full = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(kind) = it.next() else { continue };
        let rest: Vec<&str> = it.collect();
        match kind {
            "some" => some = Some(parse_line(&rest, n)?),
            "full" => full = Some(parse_line(&rest, n)?),
            other => {
                return Err(ParseError::new(n, format!("expected 'some' or 'full', found '{other}'")));
            }
        }
    }
    let some = some.ok_or_else(|| ParseError::new(0, "no 'some' line"))?;
    Ok(Pressure { some, full })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_key_once_at_least_and_repeats_do_not_overflow() {
        let ok = "some avg10=1.00 avg60=0.50 avg300=0.10 total=42\n";
        assert_eq!(super::parse(ok).unwrap().some.total_us, 42);
        // Four of one key are not the four keys.
        assert!(super::parse("some avg10=1 avg10=1 avg10=1 avg10=1\n").is_err());
        // 300 repeats: a u8 count overflowed here (fuzzing).
        let many = format!("some {} avg60=0 avg300=0 total=1\n", "avg10=0 ".repeat(300));
        assert!(super::parse(&many).is_ok());
    }
}
