//! A swap store's size and the machine's swap in use, read one way for
//! every experiment: a zram device's `mm_stat`, zswap's pool in
//! /proc/meminfo (`Zswap`, `Zswapped`), swap from `SwapTotal − SwapFree`.

use probe::Probe;

/// What a swap store holds and what it costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreSize {
    /// Bytes swapped to it, as they were (uncompressed); none where the
    /// kernel does not say (a /proc/meminfo with `Zswap` and no `Zswapped`).
    pub orig_bytes: Option<u64>,
    /// The same bytes compressed.
    pub compr_bytes: u64,
    /// The RAM the store takes, its allocator's overhead included.
    pub ram_bytes: u64,
    /// zram: pages of one repeated value, kept with no data.
    pub same_pages: Option<u64>,
    /// zram: pages kept uncompressed (they did not compress).
    pub huge_pages: Option<u64>,
}

/// A store to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Zram(u32),
    Zswap,
}

impl Store {
    /// A run's store: its zram device, else zswap where that is the backing
    /// (`kind`); None for a disk or no store.
    pub fn of(zram: Option<u32>, kind: workloads::backing::BackingKind) -> Option<Store> {
        zram.map(Store::Zram).or((kind == workloads::backing::BackingKind::Zswap).then_some(Store::Zswap))
    }
}

/// The store's size now; None when it cannot be read (a device gone, a
/// kernel without zswap's lines in /proc/meminfo).
pub fn store_size(p: &mut Probe, store: Store) -> Option<StoreSize> {
    match store {
        Store::Zram(id) => p.zram_mm_stat(id).ok().flatten().map(|m| StoreSize {
            orig_bytes: Some(m.orig_data_size),
            compr_bytes: m.compr_data_size,
            ram_bytes: m.mem_used_total,
            same_pages: Some(m.same_pages),
            huge_pages: m.huge_pages,
        }),
        Store::Zswap => {
            let m = p.meminfo().ok().flatten()?;
            let pool = m.get("Zswap")?;
            Some(StoreSize { orig_bytes: m.get("Zswapped"), compr_bytes: pool, ram_bytes: pool, ..Default::default() })
        }
    }
}

/// Swap in use on the machine, bytes; none when /proc/meminfo cannot be read.
pub fn swap_used(p: &mut Probe) -> Option<u64> {
    let m = p.meminfo().ok().flatten()?;
    Some(m.get("SwapTotal")?.saturating_sub(m.get("SwapFree")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc and /sys with one zram device and zswap's lines.
    fn fake() -> (tempfile::TempDir, Probe) {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        let sys = d.path().join("sys");
        std::fs::create_dir_all(&proc).unwrap();
        std::fs::create_dir_all(sys.join("block/zram3")).unwrap();
        // orig, compr, mem_used, mem_limit, mem_used_max, same_pages, pages_compacted, huge_pages
        std::fs::write(sys.join("block/zram3/mm_stat"), "4096000 1024000 1200000 0 1200000 7 0 3\n").unwrap();
        std::fs::write(
            proc.join("meminfo"),
            "MemTotal: 1000 kB\nSwapTotal: 2048 kB\nSwapFree: 1024 kB\nZswap: 100 kB\nZswapped: 400 kB\n",
        )
        .unwrap();
        let p = Probe::new(probe::Roots { proc, sys, fs: d.path().into() });
        (d, p)
    }

    #[test]
    fn each_store_is_read_into_the_same_fields() {
        let (d, mut p) = fake();
        let z = store_size(&mut p, Store::Zram(3)).unwrap();
        assert_eq!((z.orig_bytes, z.compr_bytes, z.ram_bytes), (Some(4_096_000), 1_024_000, 1_200_000));
        assert_eq!((z.same_pages, z.huge_pages), (Some(7), Some(3)));
        let s = store_size(&mut p, Store::Zswap).unwrap();
        assert_eq!((s.orig_bytes, s.compr_bytes, s.ram_bytes), (Some(400 << 10), 100 << 10, 100 << 10));
        assert_eq!(swap_used(&mut p), Some(1024 << 10));
        assert_eq!(store_size(&mut p, Store::Zram(4)), None, "no such device");
        assert_eq!(Store::of(None, workloads::backing::BackingKind::Zswap), Some(Store::Zswap));
        assert_eq!(Store::of(Some(2), workloads::backing::BackingKind::Zram), Some(Store::Zram(2)));
        assert_eq!(Store::of(None, workloads::backing::BackingKind::Swapfile), None);
        // Unknown is not zero: a kernel without `Zswapped`, a meminfo unread.
        let proc = d.path().join("proc");
        std::fs::write(proc.join("meminfo"), "MemTotal: 4194304 kB\nZswap: 100 kB\n").unwrap();
        let s = store_size(&mut p, Store::Zswap).unwrap();
        assert_eq!((s.orig_bytes, s.ram_bytes), (None, 100 << 10));
        assert_eq!(swap_used(&mut p), None, "no SwapTotal line");
        std::fs::remove_file(proc.join("meminfo")).unwrap();
        // A fresh probe: one keeps its files open.
        let mut p = Probe::new(probe::Roots { proc, sys: d.path().join("sys"), fs: d.path().into() });
        assert_eq!((store_size(&mut p, Store::Zswap), swap_used(&mut p)), (None, None));
    }
}
