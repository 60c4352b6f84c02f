//! rightsize in Kubernetes' terms: memory quantities read as Kubernetes reads
//! them, a `resources:` block and its QoS class, and the LimitedSwap
//! arithmetic of KEP-2400 (NodeSwap, GA in 1.34): a Burstable pod's
//! container gets swap in proportion to its memory request,
//! request ÷ the node's memory × the node's swap; Guaranteed and BestEffort
//! pods, and a container whose memory request equals its limit, get none.

use serde::{Deserialize, Serialize};
use workloads::backing::BackingKind;

const MI: u64 = 1 << 20;

/// The forms `--check` takes, for its messages.
pub const QUANTITY_FORMS: &str = "a Kubernetes memory quantity (512Mi, 1Gi, 1G = 10^9 bytes, 500M, 1e9, 123456) \
     or a pagelab size ending in iB (512MiB, 1.5GiB)";

/// A memory quantity as Kubernetes reads it (resource.Quantity): a decimal
/// number and a suffix, binary (Ki Mi Gi Ti Pi Ei), decimal (k M G T P E),
/// an exponent (e3, E9) or none; or a pagelab size ending in iB (KiB, MiB,
/// GiB, TiB, any case). Bytes, rounded up as Kubernetes rounds a memory
/// quantity. Refused: what Kubernetes would give a fraction of a byte for
/// (`512m` is 0.512 bytes: milli), a sign, and anything else, with a message
/// that says what was meant.
pub fn parse_quantity(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = |why: &str| Err(format!("'{s}' {why}: expected {QUANTITY_FORMS}"));
    if t.is_empty() {
        return bad("is empty");
    }
    if t.starts_with(['+', '-']) {
        return bad("has a sign");
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() || num.matches('.').count() > 1 || num == "." {
        return bad("does not start with a number");
    }
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a number: expected {QUANTITY_FORMS}"))?;
    let lower = suffix.to_ascii_lowercase();
    let mult: f64 = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "m" | "u" | "n" => {
            return Err(format!(
                "'{s}': Kubernetes reads {suffix} as {} of a byte, which a memory limit cannot be; write {num}Mi \
                 (mebibytes) or {num}M (megabytes)",
                match suffix {
                    "m" => "thousandths",
                    "u" => "millionths",
                    _ => "billionths",
                }
            ));
        }
        _ if matches!(lower.as_str(), "kib" | "mib" | "gib" | "tib") => match lower.as_str() {
            "kib" => 1024f64,
            "mib" => 1024f64.powi(2),
            "gib" => 1024f64.powi(3),
            _ => 1024f64.powi(4),
        },
        _ if suffix.starts_with(['e', 'E']) && suffix[1..].parse::<i32>().is_ok_and(|e| (0..=18).contains(&e)) => {
            10f64.powi(suffix[1..].parse::<i32>().unwrap_or(0))
        }
        "K" => return bad("uses K, which Kubernetes does not know (Ki is 1024, k is 1000)"),
        _ if matches!(lower.as_str(), "kb" | "mb" | "gb" | "tb" | "b") => {
            return bad("is ambiguous (pagelab reads MB as MiB, Kubernetes has no B): write Mi, M or MiB");
        }
        _ => return bad("has a suffix Kubernetes does not know"),
    };
    let bytes = (v * mult).ceil();
    if !bytes.is_finite() || bytes >= 2f64.powi(63) {
        return bad("is too large");
    }
    if bytes < 1.0 {
        return bad("is zero");
    }
    Ok(bytes as u64)
}

/// A size as Kubernetes writes it: whole Mi, rounded up.
pub fn mi(bytes: u64) -> String {
    format!("{}Mi", bytes.div_ceil(MI))
}

/// The node the LimitedSwap arithmetic is for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Node {
    pub memory_bytes: u64,
    pub swap_bytes: u64,
    /// Given with --node-memory and --node-swap (false: this machine's own).
    pub given: bool,
}

/// What the answer relies on besides the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Relies {
    /// Nothing: the program put (almost) nothing in swap at the limit.
    Nothing,
    /// A swap device (a swap file or partition, zswap in front of it or not).
    Swap,
    /// A zram device: Kubernetes' swap support does not cover it.
    Zram,
}

/// The answer in Kubernetes' terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Kubernetes {
    pub request_bytes: u64,
    pub limit_bytes: u64,
    /// The `resources:` block, ready to paste into a container.
    pub resources: String,
    /// The QoS class the block gives a one-container pod (memory only).
    pub qos: String,
    pub relies_on: Relies,
    /// The swap the program held at the limit.
    pub swap_bytes: u64,
    pub node: Node,
    /// What LimitedSwap gives the container at this request on this node.
    pub limited_swap_bytes: u64,
    /// The node swap LimitedSwap needs to give the container `swap_bytes`
    /// at this request (None when it relies on nothing).
    pub node_swap_needed_bytes: Option<u64>,
    /// The answer in words, a line each.
    pub said: Vec<String>,
}

/// The block for `limit`, with `swap` held at it on `backing` (zram,
/// zswap, swapfile, existing, none), for `node`; `v2`: this machine's
/// cgroup version, said when LimitedSwap needs what it lacks; `peak`: the
/// unlimited peak, the safe block where the node's swap is too little.
pub fn kubernetes(limit: u64, swap: u64, backing: Option<BackingKind>, v2: bool, node: Node, peak: u64) -> Kubernetes {
    let relies_on = match backing {
        _ if swap < MI => Relies::Nothing,
        Some(BackingKind::None) => Relies::Nothing,
        Some(BackingKind::Zram) => Relies::Zram,
        _ => Relies::Swap,
    };
    let limit = limit.div_ceil(MI) * MI;
    let share = |req: u64| {
        if node.memory_bytes == 0 { 0 } else { (req as u128 * node.swap_bytes as u128 / node.memory_bytes as u128) as u64 }
    };
    // With swap, the request must be below the limit (a container whose
    // request equals its limit gets no swap) and large enough that its
    // share of the node's swap holds what the program put there.
    let (request, needed) = match relies_on {
        Relies::Nothing => (limit, None),
        _ => {
            let want = if node.swap_bytes == 0 {
                u64::MAX
            } else {
                (swap as u128 * node.memory_bytes as u128).div_ceil(node.swap_bytes as u128).min(u64::MAX as u128) as u64
            };
            let req = want.div_ceil(MI).saturating_mul(MI).min(limit.saturating_sub(MI)).max(MI);
            let needed = (swap as u128 * node.memory_bytes as u128).div_ceil(req as u128) as u64;
            (req, Some(needed))
        }
    };
    let given = share(request);
    let resources = format!("resources:\n  requests:\n    memory: {}\n  limits:\n    memory: {}\n", mi(request), mi(limit));
    let qos = "Burstable".to_string();
    let whose = if node.given { "the node given" } else { "this machine as the node" };
    let mut said = Vec::new();
    match relies_on {
        Relies::Nothing => said.push(format!(
            "QoS Burstable (memory only; Guaranteed if every container also sets cpu requests equal to its limits). \
             The answer relies on no swap: {} at the limit.",
            human(swap)
        )),
        _ => {
            said.push(
                "QoS Burstable, as LimitedSwap requires: a container whose memory request equals its limit, and a \
                 Guaranteed or BestEffort pod, get no swap. The request is below the limit for that reason."
                    .to_string(),
            );
            said.push(format!(
                "LimitedSwap: swap = request ÷ node memory × node swap = {} ÷ {} × {} = {} for this container; it held \
                 {} at the limit, so {whose} {} (node swap needed at this request: {}).",
                mi(request),
                human(node.memory_bytes),
                human(node.swap_bytes),
                human(given),
                human(swap),
                if given >= swap { "gives enough" } else { "gives too little" },
                needed.map_or("none".into(), human)
            ));
            if given < swap {
                said.push(format!(
                    "Where the node's swap gives less than that, the safe block needs no swap: requests and limits \
                     memory {} (the unlimited peak).",
                    mi(peak)
                ));
            }
            said.push(format!(
                "LimitedSwap needs a cgroup v2 node (memory.swap.max) and NodeSwap (GA in Kubernetes 1.34).{}",
                if v2 { "" } else { " This machine is cgroup v1: these runs were made there, not under LimitedSwap." }
            ));
        }
    }
    if relies_on == Relies::Zram {
        said.push(
            "The answer relies on zram: Kubernetes' swap support (KEP-2400) does not cover zram, whose RAM is the \
             node's; the arithmetic above treats it as the node's swap."
                .into(),
        );
    }
    Kubernetes {
        request_bytes: request,
        limit_bytes: limit,
        resources,
        qos,
        relies_on,
        swap_bytes: swap,
        node,
        limited_swap_bytes: given,
        node_swap_needed_bytes: needed,
        said,
    }
}

/// Bytes as MiB or GiB, for a sentence.
fn human(b: u64) -> String {
    if b >= 1 << 30 { format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64) } else { format!("{} MiB", b.div_ceil(MI)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_read_as_kubernetes_reads_them() {
        let ok = [
            ("1G", 1_000_000_000),
            ("1Gi", 1 << 30),
            ("512Mi", 512 << 20),
            ("500M", 500_000_000),
            ("1.5Gi", 3 << 29),
            ("1e9", 1_000_000_000),
            ("123456", 123_456),
            ("1k", 1000),
            ("64MiB", 64 << 20),
            ("1gib", 1 << 30),
            ("0.5Ki", 512),
            ("1.0001", 2),
        ];
        for (s, want) in ok {
            assert_eq!(parse_quantity(s), Ok(want), "{s}");
        }
        for bad in ["512m", "1u", "-1Gi", "+1Gi", "1K", "1MB", "1gb", "Mi", "1.2.3Mi", "1Xi", "", "0", "0Mi", "1e99"] {
            let e = parse_quantity(bad).unwrap_err();
            assert!(e.contains(bad.trim()) || bad.is_empty(), "{bad}: {e}");
        }
        assert!(parse_quantity("512m").unwrap_err().contains("512Mi"));
    }

    fn node() -> Node {
        Node { memory_bytes: 16 << 30, swap_bytes: 4 << 30, given: true }
    }

    /// On a 16 GiB node with 4 GiB of swap a container gets a quarter of its
    /// request as swap: 100 MiB held needs a request of 400 MiB, which is
    /// below a 500 MiB limit; at a 300 MiB limit the request stops a MiB
    /// below it and the node's swap is too little.
    #[test]
    fn the_limited_swap_arithmetic_follows_the_request() {
        let k = kubernetes(500 << 20, 100 << 20, BackingKind::parse("swapfile"), true, node(), 900 << 20);
        assert_eq!((k.request_bytes, k.limit_bytes, k.relies_on), (400 << 20, 500 << 20, Relies::Swap));
        assert_eq!(k.limited_swap_bytes, 100 << 20);
        assert_eq!(k.node_swap_needed_bytes, Some(4 << 30));
        assert!(k.resources.contains("requests:\n    memory: 400Mi") && k.resources.contains("limits:\n    memory: 500Mi"));
        assert!(k.said.iter().any(|l| l.contains("gives enough")));
        let k = kubernetes(300 << 20, 100 << 20, BackingKind::parse("swapfile"), false, node(), 900 << 20);
        assert_eq!(k.request_bytes, 299 << 20);
        assert!(k.limited_swap_bytes < 100 << 20);
        assert!(k.node_swap_needed_bytes.unwrap() > 4 << 30);
        assert!(k.said.iter().any(|l| l.contains("gives too little")));
        assert!(k.said.iter().any(|l| l.contains("memory 900Mi (the unlimited peak)")));
        assert!(k.said.iter().any(|l| l.contains("cgroup v1")));
        // No swap used: request equals limit.
        let k = kubernetes(300 << 20, 0, BackingKind::parse("swapfile"), true, node(), 900 << 20);
        assert_eq!((k.request_bytes, k.relies_on, k.node_swap_needed_bytes), (300 << 20, Relies::Nothing, None));
        // zram: said that Kubernetes does not cover it.
        let k = kubernetes(300 << 20, 50 << 20, BackingKind::parse("zram"), true, node(), 900 << 20);
        assert_eq!(k.relies_on, Relies::Zram);
        assert!(k.said.iter().any(|l| l.contains("does not cover zram")));
    }
}
