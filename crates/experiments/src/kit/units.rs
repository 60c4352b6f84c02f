//! Parsing and printing sizes and durations as users type them.

use std::time::Duration;

pub const SIZE_FORMS: &str = "a number of bytes with an optional unit B, KiB, MiB, GiB, TiB (or K, M, G, KB, MB, GB as binary units), e.g. 4096, 512KiB, 64MiB, 1.5GiB";
pub const DURATION_FORMS: &str = "a number with a unit ms, s, m or h, e.g. 100ms, 1s, 2.5s, 2m";

/// Parses `64MiB`, `1.5GiB`, `4096`, `512KiB`. Units are binary (KiB = 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("'{s}' is not a size: expected {SIZE_FORMS}")),
    };
    if num.is_empty() || num.matches('.').count() > 1 {
        return Err(format!("'{s}' is not a size: expected {SIZE_FORMS}"));
    }
    let bytes = if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a size: expected {SIZE_FORMS}"))?;
        let b = v * mult as f64;
        if !b.is_finite() || b >= u64::MAX as f64 {
            return Err(format!("'{s}' is too large"));
        }
        b.round() as u64
    } else {
        let v: u64 = num.parse().map_err(|_| format!("'{s}' is too large"))?;
        v.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))?
    };
    Ok(bytes)
}

/// A whole number from LO to HI, with a message that says so (negative numbers
/// reach here: clap would otherwise call `-3` an unexpected argument).
pub fn uint64<const LO: u64, const HI: u64>(s: &str) -> Result<u64, String> {
    whole(s, LO, HI)
}

/// [`uint64`] for u32 settings.
pub fn uint32<const LO: u32, const HI: u32>(s: &str) -> Result<u32, String> {
    whole(s, LO as u64, HI as u64).map(|n| n as u32)
}

fn whole(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let range = if hi == u64::MAX && lo == 0 {
        "(0 or more)".to_string()
    } else if hi == u64::MAX {
        format!("of at least {lo}")
    } else {
        format!("from {lo} to {hi}")
    };
    match s.trim().replace('_', "").parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("'{s}': expected a whole number {range}")),
    }
}

/// A size that must be at least one byte.
pub fn parse_nonzero_size(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err(format!("'{s}': the size must be greater than zero ({SIZE_FORMS})")),
        v => Ok(v),
    }
}

/// Parses `100ms`, `1s`, `2.5s`, `2m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("'{s}' is not a duration: expected {DURATION_FORMS}");
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        "us" | "µs" => v / 1e6,
        _ => return Err(bad()),
    };
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("'{s}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration that must be positive.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("'{s}': the duration must be greater than zero ({DURATION_FORMS})")),
        d => Ok(d),
    }
}

/// A sampling interval: 10 ms .. 1 h.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(10) || d > Duration::from_secs(3600) {
        return Err(format!("'{s}': the interval must be between 10ms and 1h ({DURATION_FORMS})"));
    }
    Ok(d)
}

/// `20261122T072500Z`, for default run directory names.
pub fn utc_stamp() -> String {
    stamp_of(probe::sample::realtime_ns() / 1_000_000_000)
}

/// Unix seconds as `YYYYMMDDTHHMMSSZ`: humantime's RFC 3339 form without
/// its separators.
fn stamp_of(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string().replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        for bad in ["12XB", "", "MiB", "-1", "1.2.3MiB", "99999999999999999999", "20000000TiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_nonzero_size("0").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("2.5s").unwrap(), Duration::from_millis(2500));
        for bad in ["10", "s", "1x", "-1s", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("5ms").is_err());
        assert!(parse_positive_duration("0s").is_err());
    }

    #[test]
    fn dates() {
        assert_eq!(stamp_of(0), "19700101T000000Z");
        assert_eq!(stamp_of(20414 * 86400 + 7 * 3600 + 25 * 60 + 9), "20251122T072509Z");
        assert_eq!(stamp_of(11016 * 86400), "20000229T000000Z");
    }
}
