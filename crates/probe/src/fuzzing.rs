//! The body of the fuzz target `kernel_files` (fuzz/), kept here so that the
//! regression tests run the very same code on the inputs fuzzing found.

use crate::*;

/// Every parser of a kernel file, on the same arbitrary text: none may panic,
/// loop or allocate without bound, whatever the kernel (or a fake tree) says.
pub fn parse_everything(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let t = text.as_ref();
    // Keyed files, once fresh and once with the keys of a first parse (the
    // sampler's fast path reuses the previous sample's key order).
    if let Ok(m) = meminfo::parse(t) {
        let _ = m.total();
        let _ = m.available();
        let _ = meminfo::parse_with(t, Some(m.0.keys()));
    }
    if let Ok(v) = vmstat::parse(t) {
        let _ = v.sum_prefix("pgscan_");
        let _ = vmstat::parse_with(t, Some(v.0.keys()));
    }
    if let Ok(c) = cgroup::parse_keyed(t) {
        let _ = cgroup::parse_keyed_with(t, Some(c.keys()));
    }
    if let Ok(c) = util::parse_flat_keyed(t) {
        let _ = util::parse_flat_keyed_with(t, Some(c.keys()));
    }
    let _ = cgroup::parse_v2_limit(t);
    let _ = cgroup::parse_v1_limit(t);
    let _ = cgroup::parse_counter(t);
    let _ = cgroup::parse_v1_oom_control(t);
    let _ = mountinfo::parse(t);
    let _ = pid::parse_status(t);
    let _ = pid::parse_stat(t);
    let _ = pid::parse_smaps_rollup(t);
    let _ = pressure::parse(t);
    let _ = stat::parse(t);
    let _ = swaps::parse(t);
    let _ = util::parse_single_u64(t);
    let _ = zram::parse_mm_stat(t);
    let _ = zram::parse_io_stat(t);
    let _ = zram::parse_comp_algorithm(t);
    let _ = environment::selected_choice(t);
    let _ = kmsg::oom_reports(t, "pagelab");
    if let Ok(m) = lru_gen::parse(t) {
        let _ = m.iter().flat_map(|c| &c.nodes).filter_map(|n| n.max_seq()).max();
    }
}
