//! A program whose memory needs are known: it touches a cold set C once, then
//! sweeps a hot set H (every cache line) a given number of times. Below H + its
//! own overhead it thrashes; above, only the one-time eviction of C costs
//! anything. `pagelab __hotcold` runs it as a plain program, so rightsize
//! treats it like anyone else's command.

use std::io::Write;
use std::time::Instant;

/// Rounds of arithmetic per hot page per sweep.
const WORK_PER_PAGE: u32 = 48;

pub struct HotCold {
    pub hot: u64,
    pub cold: u64,
    /// Sweeps of the hot set; 0 sweeps until killed (a service).
    pub passes: u64,
}

/// Its resident memory; none (null in its lines) when unread, never 0.
fn rss_bytes(p: &mut probe::Probe) -> Option<u64> {
    p.pid_status(std::process::id() as i32).ok().flatten().and_then(|s| s.vm_rss)
}

/// Runs the program; prints a JSON line on stdout when its memory is in place
/// (`ready`, with the RSS it had before allocating) and one when it is done.
/// Its own /proc/self is read through `p` (the program's edge makes it).
pub fn run(h: &HotCold, p: &mut probe::Probe) -> Result<(), String> {
    let page = workloads::mm::page_size();
    let before = rss_bytes(p);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut cold =
        workloads::mm::Mapping::anon((h.cold as usize).max(page), 0).map_err(|e| format!("mmap cold: {e}"))?;
    // Cold pages: 256 random bytes, the rest zero (cheap to compress: the
    // one-time eviction of C costs little beside the runtime).
    workloads::kernels::fill_page_heads(cold.as_mut_slice(), page, 256, &mut seed);
    let mut hot = workloads::mm::Mapping::anon((h.hot as usize).max(page), 0).map_err(|e| format!("mmap hot: {e}"))?;
    workloads::kernels::fill_xorshift(hot.as_mut_slice(), &mut seed);
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "{}",
        serde_json::json!({"ready": true, "rss_before_bytes": before, "rss_bytes": rss_bytes(p),
            "hot_bytes": h.hot, "cold_bytes": h.cold})
    );
    let _ = out.flush();
    let t0 = Instant::now();
    let mut sum = 0u64;
    let mut n = 0u64;
    while h.passes == 0 || n < h.passes {
        // One word of every page read and written (every page stays
        // referenced), then arithmetic in registers: the runtime is CPU
        // time, not memory bandwidth, which neighbours on a shared host
        // disturb far more.
        sum = sum.wrapping_add(workloads::kernels::sweep_pages(hot.as_mut_slice(), page, WORK_PER_PAGE));
        n += 1;
    }
    let _ = writeln!(
        out,
        "{}",
        serde_json::json!({"done": true, "passes": n, "seconds": t0.elapsed().as_secs_f64(), "checksum": sum})
    );
    Ok(())
}
