//! Compressibility estimates: compress 4 KiB pages with lz4 and zstd (level 1),
//! the way a compressed store sees them, one page at a time.

pub use record::results::eat::Estimate;

/// At most this many pages are compressed; larger regions are sampled evenly.
pub const MAX_PAGES: usize = 16_384;

/// Compresses every page (or an even sample) of `buf`. A page that does not
/// shrink counts at its full size, as a store keeps it uncompressed.
pub fn estimate(buf: &[u8], page: usize) -> Estimate {
    let n = buf.len() / page;
    if n == 0 {
        return Estimate::default();
    }
    let step = n.div_ceil(MAX_PAGES).max(1);
    let mut zc = zstd::bulk::Compressor::new(1).expect("zstd level 1");
    // Separate buffers: zstd writes into a Vec's spare capacity and sets its length.
    let mut out_lz = vec![0u8; lz4_flex::block::get_maximum_output_size(page)];
    let mut out_z: Vec<u8> = Vec::with_capacity(zstd::zstd_safe::compress_bound(page));
    let (mut lz, mut zs, mut orig, mut pages) = (0u64, 0u64, 0u64, 0u64);
    for i in (0..n).step_by(step) {
        let p = &buf[i * page..(i + 1) * page];
        let l = lz4_flex::block::compress_into(p, &mut out_lz).unwrap_or(page);
        out_z.clear();
        let z = zc.compress_to_buffer(p, &mut out_z).unwrap_or(page);
        lz += l.min(page) as u64;
        zs += z.min(page) as u64;
        orig += page as u64;
        pages += 1;
    }
    Estimate { lz4: lz as f64 / orig as f64, zstd: zs as f64 / orig as f64, pages }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fill::{Pattern, fill};

    #[test]
    fn patterns_rank_by_compressibility() {
        let mut b = vec![0u8; 4096 * 64];
        let mut est = |p| {
            fill(&mut b, p, 20, 9);
            estimate(&b, 4096)
        };
        let r = est(Pattern::Random);
        let s = est(Pattern::Semi);
        let c = est(Pattern::Const);
        assert!(r.lz4 > 0.99 && r.zstd > 0.99, "{r:?}");
        assert!(s.lz4 < 0.5 && s.lz4 > 0.05, "{s:?}");
        assert!(c.lz4 < 0.02 && c.zstd < 0.02, "{c:?}");
        assert_eq!(r.pages, 64);
    }
}
