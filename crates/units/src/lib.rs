//! pagelab's units: one converter and one formatter for each, used by every
//! crate (the probe reads counters, the sandbox says what it would not do,
//! the reports draw and write). tests/house.rs keeps the inline conversions
//! (`/ 1048576.0`, `>> 20`) out of the rest of the code.

/// Bytes in a KiB, a MiB and a GiB.
pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// Bytes in a MiB, as a float: a figure's export scale (MiB shown, bytes
/// exported).
pub const MIB_F: f64 = MIB as f64;

/// A byte count in MiB, with its fraction (for figures and charts).
pub fn mib(b: u64) -> f64 {
    b as f64 / MIB_F
}

/// A byte count in whole MiB, rounded down (for messages that say "64 MiB").
pub fn whole_mib(b: u64) -> u64 {
    b >> 20
}

/// A byte count for people, in binary units with two decimals past bytes
/// ("512 B", "1.50 KiB", "24.00 GiB"): pagelab's one byte formatter (text,
/// reports, the monitor, errors). Flag values are written by
/// `experiments::kit::lab_args::Size` instead, in a form the flags parse.
pub fn bytes(v: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = v as f64;
    let mut i = 0;
    while x >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 { format!("{v} B") } else { format!("{x:.2} {}", U[i]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(24 * GIB), "24.00 GiB");
        assert_eq!(bytes(u64::MAX), "16777216.00 TiB");
    }

    #[test]
    fn mib_whole_and_fractional() {
        assert_eq!(mib(3 * MIB / 2), 1.5);
        assert_eq!(whole_mib(3 * MIB / 2), 1);
        assert_eq!(whole_mib(MIB - 1), 0);
        assert_eq!(MIB_F, 1048576.0);
    }
}
