//! Before the first limited run: where a backing's knee should be, and what
//! the memory in all should be at it, from what the unlimited runs showed —
//! the steady working set (the referenced bits of the second run) and the
//! compressibility of the program's cold pages, read from the running
//! program as `assess` reads them. Printed beside what the search then
//! measures, so that a user learns how far the prediction can be trusted.
//!
//! The model is deliberately simple: the knee is where the working set
//! fits (the search's first probe: W + 10 % + 4 MiB), whatever the store;
//! what does not fit (the unlimited peak less the knee, at most the
//! program's resident anonymous memory: page cache never goes to a swap
//! store) goes to the store, which keeps it in RAM at the stored fraction of
//! its compressor (zram, zswap) or not at all (a swap file on disk).

use crate::kit::pages::{Compress, Compressibility};
use crate::rightsize::results::Prediction;
use crate::rightsize::work::search::{MIB, first_probe, usable_working_set};
use workloads::backing::BackingKind;

/// At most this much of the program is read and compressed for the sample.
pub const SAMPLE_BYTES: u64 = 32 * MIB;

/// Whole MiB, up.
fn mib_up(b: u64) -> u64 {
    b.div_ceil(MIB) * MIB
}

/// The compressor whose figure stands for a store's: zstd for zstd, lz4 for
/// the LZ family (lz4, lzo, lzo-rle) and anything else (said so).
pub fn proxy(compressor: Option<&str>) -> &'static str {
    match compressor {
        Some(c) if c.starts_with("zstd") => "zstd",
        _ => "lz4",
    }
}

/// Compressed ÷ original of the pages in `c` by `proxy` (same-filled pages
/// cost nothing, as the stores keep them); None without a page.
fn stored_fraction(c: &Compressibility, page: u64, proxy: &str) -> Option<f64> {
    if c.pages == 0 || page == 0 {
        return None;
    }
    let bytes = if proxy == "zstd" { c.zstd_bytes } else { c.lz4_bytes };
    Some((bytes as f64 / (c.pages * page) as f64).clamp(0.0, 1.0))
}

/// The prediction for a store of `kind` (zram, zswap, swapfile, existing,
/// none) with `compressor`, from the steady working set `ws`, the unlimited
/// `peak` and the `sample` of the program's pages (its cold pages, or all of
/// them when none read as cold). `inside`: the store's pool is charged
/// inside the limit (zswap on cgroup v2), so the knee must hold it too.
pub fn predict(
    ws: u64,
    peak: u64,
    kind: BackingKind,
    compressor: Option<&str>,
    sample: Option<&Compress>,
    inside: bool,
) -> Prediction {
    let top = mib_up(peak.max(MIB));
    let usable = usable_working_set(ws, top);
    let probe = usable.map_or(top, |w| first_probe(w, top));
    let knee = probe;
    let anon = sample.map(|s| s.resident_pages * s.page_size).filter(|&a| a > 0);
    let cold = peak.saturating_sub(knee).min(anon.unwrap_or(u64::MAX));
    let compressed = kind.compressed();
    let px = compressed.then(|| proxy(compressor));
    let (fraction, read, cold_read) = match (px, sample) {
        (Some(p), Some(s)) => {
            let from = if s.cold.pages > 0 { &s.cold } else { &s.all };
            (stored_fraction(from, s.page_size, p), s.all.pages, s.cold.pages)
        }
        (_, Some(s)) => (None, s.all.pages, s.cold.pages),
        _ => (None, 0, 0),
    };
    // A compressed store with no sample: assume it keeps everything (the
    // safe side of a total).
    let store = match (compressed, fraction) {
        (false, _) => 0,
        (true, Some(f)) => (cold as f64 * f).round() as u64,
        (true, None) => cold,
    };
    // Charged inside the limit, the pool needs room beside the working set
    // (never more than the peak).
    let knee = if inside { (probe + store).min(top) } else { probe };
    let total = if inside { knee } else { knee + store };
    let m = |b: u64| b / MIB;
    let how = match (compressed, fraction) {
        (false, _) => "on disk: the store takes no RAM".to_string(),
        (true, Some(f)) => format!(
            "stored at {:.2} of its size ({} of {} pages read were cold, by {})",
            f,
            cold_read,
            read,
            px.unwrap_or("lz4")
        ),
        (true, None) => "no page could be read: counted at its full size".to_string(),
    };
    let said = format!(
        "predicted for {kind}{}: knee ~{} MiB ({}{}); {} MiB to the store, {how}: ~{} MiB of RAM; in all ~{} MiB",
        compressor.map(|c| format!(" {c}")).unwrap_or_default(),
        m(knee),
        match usable {
            Some(_) => format!("the first probe, from a working set of {} MiB", m(ws)),
            None => format!("the peak: the working set read, {} KiB, is too small to start from", ws >> 10),
        },
        if inside { ", plus the pool, which cgroup v2 charges inside the limit" } else { "" },
        m(cold),
        m(store),
        m(total)
    );
    Prediction {
        knee_bytes: knee,
        working_set_bytes: ws,
        cold_bytes: cold,
        stored_fraction: fraction,
        proxy: px.map(str::to_string),
        pages_read: read,
        cold_pages_read: cold_read,
        store_bytes: store,
        total_bytes: total,
        sample_seconds: 0.0,
        said,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample of `all_pages` pages (`cold_pages` of them cold, compressing
    /// to `cold_lz4` bytes by lz4) from 1 GiB of resident anonymous memory.
    fn sample(cold_pages: u64, cold_lz4: u64, all_pages: u64) -> Compress {
        Compress {
            page_size: 4096,
            resident_pages: (1 << 30) / 4096,
            all: Compressibility { pages: all_pages, lz4_bytes: all_pages * 4096, zstd_bytes: all_pages * 2048, ..Default::default() },
            cold: Compressibility {
                pages: cold_pages,
                lz4_bytes: cold_lz4,
                zstd_bytes: cold_lz4 / 2,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn the_knee_holds_the_working_set_and_the_store_keeps_the_cold_at_its_fraction() {
        // 64 MiB hot, 256 MiB peak; the cold pages compress to a quarter by lz4.
        let s = sample(1000, 1000 * 1024, 1200);
        let z = predict(64 * MIB, 256 * MIB, BackingKind::Zram, Some("lzo-rle"), Some(&s), false);
        assert_eq!(z.knee_bytes, mib_up(64 * MIB + 64 * MIB / 10 + 4 * MIB));
        assert_eq!(z.cold_bytes, 256 * MIB - z.knee_bytes);
        assert_eq!(z.proxy.as_deref(), Some("lz4"));
        assert!((z.stored_fraction.unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(z.store_bytes, (z.cold_bytes as f64 * 0.25).round() as u64);
        assert_eq!(z.total_bytes, z.knee_bytes + z.store_bytes);
        // zstd stands for itself, and stores less here.
        let zs = predict(64 * MIB, 256 * MIB, BackingKind::Zswap, Some("zstd"), Some(&s), false);
        assert_eq!(zs.proxy.as_deref(), Some("zstd"));
        assert!(zs.total_bytes < z.total_bytes);
        // A disk swap keeps nothing in RAM: the total is the knee.
        let d = predict(64 * MIB, 256 * MIB, BackingKind::Swapfile, None, Some(&s), false);
        assert_eq!((d.store_bytes, d.total_bytes, d.stored_fraction), (0, d.knee_bytes, None));
        assert!(d.said.contains("on disk"), "{}", d.said);
        // zswap on cgroup v2: the pool is charged inside the limit, so the
        // knee holds it and the total is the knee, not the knee plus the pool.
        let v2 = predict(64 * MIB, 256 * MIB, BackingKind::Zswap, Some("zstd"), Some(&s), true);
        assert_eq!(v2.store_bytes, zs.store_bytes);
        assert_eq!(v2.knee_bytes, (zs.knee_bytes + zs.store_bytes).min(256 * MIB));
        assert_eq!(v2.total_bytes, v2.knee_bytes);
        assert!(v2.said.contains("inside the limit"), "{}", v2.said);
        // Nothing compresses: the pool pushes the knee to the peak, no higher.
        let flat = sample(1000, 1000 * 4096, 1200);
        let top = predict(64 * MIB, 256 * MIB, BackingKind::Zswap, Some("lzo"), Some(&flat), true);
        assert_eq!((top.knee_bytes, top.total_bytes), (256 * MIB, 256 * MIB));
    }

    #[test]
    fn without_cold_pages_or_a_sample_the_prediction_stays_on_the_safe_side() {
        // No page read as cold: all pages stand for the cold ones (lz4 keeps
        // them whole here).
        let s = sample(0, 0, 500);
        let z = predict(32 * MIB, 128 * MIB, BackingKind::Zram, None, Some(&s), false);
        assert_eq!(z.stored_fraction, Some(1.0));
        // No sample at all: the store is counted at its full size.
        let n = predict(32 * MIB, 128 * MIB, BackingKind::Zram, None, None, false);
        assert_eq!(n.store_bytes, n.cold_bytes);
        assert_eq!(n.total_bytes, 128 * MIB);
        assert!(n.said.contains("counted at its full size"));
        // A working set under a MiB is no place to start: the peak, said so.
        let tiny = predict(MIB / 2, 128 * MIB, BackingKind::Zram, None, None, false);
        assert_eq!(tiny.knee_bytes, 128 * MIB);
        assert!(tiny.said.contains("the peak: the working set read, 512 KiB"), "{}", tiny.said);
        // A working set above the peak: the search starts just under the
        // peak (95 % of it), and little is cold.
        let w = predict(300 * MIB, 100 * MIB, BackingKind::Zram, None, None, false);
        assert_eq!(w.knee_bytes, 95 * MIB);
        assert_eq!(w.cold_bytes, 5 * MIB);
        // Cold is at most the resident anonymous memory sampled: the rest of
        // the peak (page cache) never goes to a swap store.
        let small = Compress { resident_pages: 1280, ..sample(10, 10 * 1024, 20) };
        let c = predict(32 * MIB, 256 * MIB, BackingKind::Zram, None, Some(&small), false);
        assert_eq!(c.cold_bytes, 1280 * 4096);
    }
}
