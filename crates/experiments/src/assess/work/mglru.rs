//! Cold memory from MGLRU's generations of the target's memory cgroup.

use super::*;

/// The target's memory cgroup in lru_gen.
pub(super) fn lru_gen_of(p: &mut Probe, path: &str) -> Result<probe::lru_gen::Memcg, ExperimentError> {
    let all = match p.lru_gen() {
        Ok(Some(all)) => all,
        Ok(None) => return Err(err(format!("{LRU_GEN} is gone"))),
        Err(e) => return Err(err(e.to_string())),
    };
    all.into_iter().find(|m| m.path == path).ok_or_else(|| err(format!("{LRU_GEN} lists no memory cgroup {path}")))
}

/// One MGLRU pass over the windows `w_1 < … < w_n`: the target's memory
/// cgroup is aged at `T − w_n, T − w_(n−1), …, T − w_1` and at `T`. Each aging
/// walks the page tables, moves every page it finds accessed into the
/// youngest generation, then opens a new, empty one. A page therefore sits in
/// the generation that was youngest when an aging last found it accessed, and
/// the pages below the generation opened at `T − w_k` were not touched within
/// `w_k`: cold at that window. (A page faulted in between agings joins a young
/// generation and counts as touched.)
pub(super) fn mglru_pass(
    p: &mut Probe,
    pid: i32,
    path: &str,
    windows: &[Duration],
    stop: &dyn Fn() -> bool,
) -> Result<(Vec<Window>, MglruRun), ExperimentError> {
    let n = windows.len();
    let longest = windows[n - 1];
    // Offsets from t0 of the agings: 0, w_n − w_(n−1), …, w_n − w_1, w_n.
    let mut at: Vec<Duration> = vec![Duration::ZERO];
    at.extend((1..n).map(|j| longest - windows[n - 1 - j]));
    at.push(longest);
    let t0 = Instant::now();
    // The youngest sequence number per node after each aging.
    let mut made: Vec<Vec<(u32, u64)>> = Vec::new();
    let mut last = None;
    for (j, off) in at.iter().enumerate() {
        wait_until(p, t0 + *off, pid, &format!("MGLRU aging {}", j + 1), stop)?;
        let m = lru_gen_of(p, path)?;
        for node in &m.nodes {
            let Some(max) = node.max_seq() else { continue };
            sandbox::mm::lru_gen_age(Path::new("/sys"), m.id, node.node, max)
                .map_err(|e| err(format!("{LRU_GEN}: aging memcg {} node {}: {e}", m.id, node.node)))?;
        }
        let after = lru_gen_of(p, path)?;
        let seqs: Vec<(u32, u64)> = after.nodes.iter().filter_map(|nd| Some((nd.node, nd.max_seq()?))).collect();
        for ((node, now), nd) in seqs.iter().zip(&m.nodes) {
            if nd.max_seq().is_some_and(|b| *now <= b) {
                return Err(ExperimentError::Worker(format!("MGLRU did not age node {node} of {path}")));
            }
        }
        made.push(seqs);
        last = Some(after);
    }
    let m = last.expect("at least two agings");
    let out = mglru_windows(windows, &made, &m, probe::environment::page_size());
    let run = MglruRun {
        memcg: path.to_string(),
        memcg_id: m.id,
        agings_s: at.iter().map(|d| d.as_secs_f64()).collect(),
        generations: m.nodes.iter().map(|n| n.gens.len() as u32).sum(),
    };
    Ok((out, run))
}

/// The windows from the generations at `T` and the youngest sequence numbers
/// after each aging (`made[j]`, per node; aging j at `T − w_(n−j)`, the last at `T`).
pub(super) fn mglru_windows(
    windows: &[Duration],
    made: &[Vec<(u32, u64)>],
    m: &probe::lru_gen::Memcg,
    page: u64,
) -> Vec<Window> {
    let n = windows.len();
    let mut res = Kinds::default();
    let mut cold = vec![Kinds::default(); n];
    for node in &m.nodes {
        for g in &node.gens {
            res.anon += g.anon * page;
            res.file += g.file * page;
            for (k, c) in cold.iter_mut().enumerate() {
                // An aging moves the pages it finds accessed into the youngest
                // generation, then opens a new one. So the pages of window k
                // (0-based, ascending) that were touched after T − w_k sit in
                // generations at or above the one opened at T − w_k: the cold
                // ones lie below it.
                let bound = made[n - 1 - k].iter().find(|(nd, _)| *nd == node.node).map(|x| x.1);
                if bound.is_some_and(|b| g.seq < b) {
                    c.anon += g.anon * page;
                    c.file += g.file * page;
                }
            }
        }
    }
    // Shmem is counted with anon (both swap-backed): none resident apart, so its cold is NaN.
    windows.iter().zip(cold).map(|(w, c)| window(w.as_secs_f64(), res, res.minus(&c))).collect()
}
