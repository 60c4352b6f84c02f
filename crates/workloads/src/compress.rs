//! Compressibility estimates: compress 4 KiB pages with lz4 and zstd (level 1),
//! the way a compressed store sees them, one page at a time.

use serde::{Deserialize, Serialize};

/// Estimated stored fraction (compressed bytes / original bytes) per compressor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Estimate {
    #[serde(default = "record::results::nan")]
    pub lz4: f64,
    #[serde(default = "record::results::nan")]
    pub zstd: f64,
    /// Pages compressed (a sample for large regions).
    pub pages: u64,
}

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
    let mut pc = PageCompressor::new(page);
    let (mut lz, mut zs, mut orig, mut pages) = (0u64, 0u64, 0u64, 0u64);
    for i in (0..n).step_by(step) {
        let (l, z) = pc.sizes(&buf[i * page..(i + 1) * page]);
        lz += l as u64;
        zs += z as u64;
        orig += page as u64;
        pages += 1;
    }
    Estimate { lz4: lz as f64 / orig as f64, zstd: zs as f64 / orig as f64, pages }
}

/// Compresses one page at a time with lz4 and zstd level 1, reusing its buffers.
pub struct PageCompressor {
    page: usize,
    zc: zstd::bulk::Compressor<'static>,
    out_lz: Vec<u8>,
    out_z: Vec<u8>,
}

impl PageCompressor {
    pub fn new(page: usize) -> Self {
        PageCompressor {
            page,
            zc: zstd::bulk::Compressor::new(1).expect("zstd level 1"),
            out_lz: vec![0u8; lz4_flex::block::get_maximum_output_size(page)],
            // Separate buffers: zstd writes into a Vec's spare capacity and sets its length.
            out_z: Vec::with_capacity(zstd::zstd_safe::compress_bound(page)),
        }
    }

    /// The page's compressed sizes (lz4, zstd); one that does not shrink counts
    /// at its full size, as a store keeps it uncompressed.
    pub fn sizes(&mut self, p: &[u8]) -> (usize, usize) {
        let l = lz4_flex::block::compress_into(p, &mut self.out_lz).unwrap_or(self.page);
        self.out_z.clear();
        let z = self.zc.compress_to_buffer(p, &mut self.out_z).unwrap_or(self.page);
        (l.min(self.page), z.min(self.page))
    }
}

/// Whether a page is one 8-byte value repeated (zero included): what zram and
/// zswap store as a "same-filled" page, without compressing it.
pub fn same_filled(p: &[u8]) -> Option<u64> {
    let mut words = p.chunks_exact(8).map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")));
    let first = words.next()?;
    words.all(|w| w == first).then_some(first)
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
