//! rightsize's answer: the ready lines and the recommendation at a
//! verified limit, or the safe limit and the best candidate when none was.

use super::{MIB, compressed, pool_inside_limit, search};
use crate::rightsize::results::{Recommendation, RightsizeResult, Unverified};
use record::stats::claim;
use workloads::backing::BackingKind;

/// Sizes as systemd, docker and Kubernetes read them: whole MiB, rounded up.
fn m_units(b: u64) -> u64 {
    b.div_ceil(MIB)
}

/// The ready lines for `limit`, with `swap_room` of swap beside it.
fn ready_lines(limit: u64, swap_room: u64, peak: u64) -> Vec<String> {
    let (l, s, p) = (m_units(limit), m_units(swap_room), m_units(peak));
    let mut lines = vec![if s > 0 {
        format!("systemd:    MemoryMax={l}M MemorySwapMax={s}M")
    } else {
        format!("systemd:    MemoryMax={l}M")
    }];
    lines.push(if s > 0 {
        format!("docker run: --memory {l}m --memory-swap {}m", l + s)
    } else {
        format!("docker run: --memory {l}m")
    });
    // With swap, Kubernetes' block comes apart (kube.rs): its request must
    // be below its limit, and LimitedSwap's share depends on the node.
    if s == 0 {
        lines.push(format!("kubernetes: resources: {{requests: {{memory: {l}Mi}}, limits: {{memory: {l}Mi}}}}"));
    } else {
        lines.push(format!(
            "(the limit relies on swap: on a node without it, Kubernetes' default, give the peak, {p}Mi)"
        ));
    }
    lines
}

/// The answer at the verified `limit`; why not, when it needs the compressed
/// store's size there (what the limit needs in all) and that was not read.
pub(super) fn recommend(
    res: &RightsizeResult,
    limit: u64,
    v: &search::Verification,
    swap: Option<u64>,
    node: crate::rightsize::kube::Node,
) -> Result<Recommendation, String> {
    let e = claim::estimate(&v.ratios);
    let look = v.last().copied();
    // A swap file or no swap keeps nothing of pagelab's in RAM beside the
    // limit. (An existing swap is the user's: a zram device or a zswap pool
    // in front of it is not measured here, and the summary says so.)
    let (store, held) = if compressed(res.backing) {
        let unread = || {
            format!(
                "the {} store's size at {} MiB could not be read, so what that limit needs in all is unknown",
                res.backing.map_or("-", BackingKind::name),
                limit / MIB
            )
        };
        let store = res.curve.iter().find(|p| p.limit_bytes == limit).and_then(|p| p.store_used_bytes);
        // What it held only says whether it compressed: unread, that is unknown.
        let held: Option<Vec<u64>> =
            res.runs.iter().filter(|r| r.limit_bytes == Some(limit)).map(|r| r.store_orig_bytes).collect();
        (store.ok_or_else(unread)?, held.and_then(|h| h.into_iter().max()))
    } else {
        (0, Some(0))
    };
    let swap = match swap {
        _ if res.backing == Some(BackingKind::None) => 0,
        Some(s) => s,
        None => return Err(format!("the swap in use at {} MiB could not be read, so the swap beside that limit is unknown", limit / MIB)),
    };
    let peak = res.baseline.as_ref().map(|b| b.peak_bytes_max).unwrap_or(0);
    // What the program put in swap at the limit, with a quarter more room.
    // (Under a MiB is a few pages the kernel swapped at the edge, not a need.)
    let swap_room = if res.backing == Some(BackingKind::None) || swap < MIB { 0 } else { swap + swap / 4 };
    let lines = ready_lines(limit, swap_room, peak);
    let (l, p) = (m_units(limit), m_units(peak));
    let inside = pool_inside_limit(res.backing, res.cgroup_version == Some(probe::cgroup::CgroupVersion::V2));
    let total = if inside { limit } else { limit + store };
    let saved = peak as i64 - total as i64;
    let compressed = compressed(res.backing);
    let store_compresses =
        held.filter(|&h| compressed && h >= MIB).map(|h| (store as f64) <= 0.7 * h as f64);
    let held = held.unwrap_or(0);
    let (lo, hi) = e.map(|e| (e.ci95[0] - 1.0, e.ci95[1] - 1.0)).unwrap_or((f64::NAN, f64::NAN));
    let slow = e.map(|e| e.estimate - 1.0).unwrap_or_else(|| v.ratios.first().map_or(f64::NAN, |r| r - 1.0));
    let upper = look.map_or(f64::NAN, |k| k.upper);
    // The first line is what the user saves in all: the limit plus what the
    // store holds in RAM, against the unlimited peak.
    let first = if store_compresses == Some(false) {
        format!(
            "{} saves nothing here: what it holds does not compress ({} MiB held in {} MiB of RAM), so {} is {} \
             MiB against a {p} MiB peak; a disk swap would save the RAM the store takes.",
            res.backing.map_or("-", BackingKind::name),
            held / MIB,
            store / MIB,
            if inside { "the limit (which holds the store: zswap's pool is charged to the group on cgroup v2)" } else { "the limit plus the store" },
            total / MIB
        )
    } else if saved > 0 {
        format!(
            "Give '{}' {l} MiB: in all (the limit{}) it needs {} MiB, {} MiB ({:.0} %) less than its unlimited peak of {p} MiB.",
            res.command.join(" "),
            match (store > 0, inside) {
                (true, false) => format!(" and the {} MiB the compressed store held", store / MIB),
                (true, true) => format!(", which holds the {} MiB zswap's pool took: cgroup v2 charges it there", store / MIB),
                (false, _) => String::new(),
            },
            total / MIB,
            saved / MIB as i64,
            saved as f64 / peak.max(1) as f64 * 100.0
        )
    } else {
        format!(
            "Give '{}' {l} MiB: nothing to save: in all it needs {} MiB against an unlimited peak of {p} MiB.",
            res.command.join(" "),
            total / MIB
        )
    };
    let summary = format!(
        "{first} Verified: at that limit it ran {:+.1} % slower than unlimited (95 % interval {:+.1} % to {:+.1} %, \
         {} pairs of runs side by side; one-sided upper bound {:+.1} % at α {:.4}, within the {:.0} % asked for). \
         {} runs in all, on cgroup {} with {} backing.",
        slow * 100.0,
        lo * 100.0,
        hi * 100.0,
        v.ratios.len(),
        (upper - 1.0) * 100.0,
        look.map_or(f64::NAN, |k| k.alpha),
        res.target_slowdown * 100.0,
        res.runs.len(),
        res.cgroup_version.map_or("an unknown".into(), |v| v.to_string()),
        res.backing.map_or("no", BackingKind::name),
    );
    let summary = existing_said(res, summary);
    Ok(Recommendation {
        limit_bytes: limit,
        verified: true,
        pairs: v.ratios.len() as u32,
        slowdown: slow,
        slowdown_ci95: e.map(|_| [lo, hi]),
        swap_bytes: swap,
        total_bytes: total,
        saved_bytes: saved,
        store_compresses,
        upper_bound: upper,
        look_alpha: look.map_or(f64::NAN, |k| k.alpha),
        lines,
        summary,
        kubernetes: Some(crate::rightsize::kube::kubernetes(limit, swap, res.backing, res.cgroup_version == Some(probe::cgroup::CgroupVersion::V2), node, peak)),
    })
}

/// An existing swap's caveat after the summary.
fn existing_said(res: &RightsizeResult, summary: String) -> String {
    if res.backing != Some(BackingKind::Existing) {
        return summary;
    }
    format!(
        "{summary} The existing swap is the machine's own: the RAM a zram device or a zswap pool in front of it \
         takes is not measured, and not in the total."
    )
}

/// A limit verified within the target whose answer cannot be given (`why`:
/// what it needs in all is unknown): the peak as the safe limit (its
/// lines), and the verified limit said as such, not as a failed candidate.
pub(super) fn unanswered(res: &RightsizeResult, v: &search::Verification, why: &str) -> Unverified {
    let mut u = unverified(res, Some(v), why);
    let (pairs, upper) = (v.ratios.len(), v.last().map_or(f64::NAN, |k| k.upper));
    u.summary = format!(
        "{} MiB was verified within {:.0} % ({} pairs of runs side by side, upper bound {:.3}), but {why}: the safe \
         limit is the unlimited peak, {} MiB (the lines below).",
        v.limit / MIB,
        res.target_slowdown * 100.0,
        pairs,
        upper,
        u.safe_limit_bytes / MIB
    );
    u
}

/// Nothing verified: the peak as the safe limit (its lines), and the best
/// candidate measured, labelled unverified.
pub(super) fn unverified(res: &RightsizeResult, best: Option<&search::Verification>, why: &str) -> Unverified {
    let peak = res.baseline.as_ref().map(|b| b.peak_bytes_max).unwrap_or(0);
    let safe = peak.div_ceil(MIB) * MIB;
    let look = best.and_then(|v| v.last().copied());
    let best_txt = match (best, look) {
        (Some(v), Some(k)) => format!(
            " The best candidate measured, {} MiB, ran {:.3}× unlimited over {} pairs with an upper bound of {:.3}: \
             unverified, so not in the lines.",
            v.limit / MIB,
            k.ratio,
            k.pairs,
            k.upper
        ),
        _ => String::new(),
    };
    Unverified {
        safe_limit_bytes: safe,
        best_limit_bytes: best.map(|v| v.limit),
        best_pairs: look.map_or(0, |k| k.pairs),
        best_ratio: look.map_or(f64::NAN, |k| k.ratio),
        best_upper_bound: look.map_or(f64::NAN, |k| k.upper),
        lines: ready_lines(safe, 0, peak),
        summary: format!(
            "Nothing verified within {:.0} %: the safe limit is the unlimited peak, {} MiB (the lines below).{best_txt} \
             Why: {why}",
            res.target_slowdown * 100.0,
            safe / MIB
        ),
    }
}
