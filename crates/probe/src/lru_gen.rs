//! The multi-generational LRU's debugfs file, `/sys/kernel/debug/lru_gen`:
//! per memory cgroup and node, each generation's sequence number, its age and
//! its anon and file pages.
//!
//! ```text
//! memcg     1 /
//!  node     0
//!           0      27456   0        1232
//!           1      10236   0        2870
//!           2       4048   21       5502
//!           3       1100   36853    904
//! ```

use crate::error::ParseError;

/// One generation of one node's LRU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    pub seq: u64,
    /// Milliseconds since the generation was born.
    pub age_ms: u64,
    /// Pages (not bytes). Anon includes shmem (both are swap-backed).
    pub anon: u64,
    pub file: u64,
}

/// One node's generations, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub node: u32,
    pub gens: Vec<Generation>,
}

impl Node {
    /// The youngest generation's sequence number (the kernel's max_seq).
    pub fn max_seq(&self) -> Option<u64> {
        self.gens.iter().map(|g| g.seq).max()
    }
}

/// One memory cgroup: its id (what the file's commands name), its path
/// relative to the hierarchy's root, and its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memcg {
    pub id: u64,
    pub path: String,
    pub nodes: Vec<Node>,
}

/// Parses the file. Lines it does not know (the kernel's optional stats with
/// CONFIG_LRU_GEN_STATS) are skipped; a generation line before any node, or a
/// number that is not one, is an error.
pub fn parse(text: &str) -> Result<Vec<Memcg>, ParseError> {
    let mut out: Vec<Memcg> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = |what: &str| ParseError::new(i + 1, format!("{what}: '{}'", line.trim()));
        match f.as_slice() {
            [] => {}
            ["memcg", id, rest @ ..] => out.push(Memcg {
                id: id.parse().map_err(|_| bad("a memcg id that is not a number"))?,
                path: rest.join(" "),
                nodes: Vec::new(),
            }),
            ["node", n] => {
                let m = out.last_mut().ok_or_else(|| bad("a node before any memcg"))?;
                m.nodes
                    .push(Node { node: n.parse().map_err(|_| bad("a node that is not a number"))?, gens: Vec::new() });
            }
            [seq, age, anon, file] if seq.bytes().all(|b| b.is_ascii_digit()) => {
                let node = out
                    .last_mut()
                    .and_then(|m| m.nodes.last_mut())
                    .ok_or_else(|| bad("a generation before any node"))?;
                let num = |s: &str| s.parse::<u64>().map_err(|_| bad("a generation's field that is not a number"));
                node.gens.push(Generation { seq: num(seq)?, age_ms: num(age)?, anon: num(anon)?, file: num(file)? });
            }
            _ => {} // the stats lines of CONFIG_LRU_GEN_STATS
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memcgs_nodes_and_generations() {
        let t = "memcg     1 /\n node     0\n          0      27456          0       1232\n          1      10236          0       2870\n          2       4048         21       5502\n          3       1100      36853        904\nmemcg    42 /pagelab/assess-7-0\n node     0\n          5        350       8192          3\n          6         12        100          0\n";
        let m = parse(t).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].id, m[0].path.as_str()), (1, "/"));
        assert_eq!(m[0].nodes[0].gens.len(), 4);
        assert_eq!(m[0].nodes[0].gens[3], Generation { seq: 3, age_ms: 1100, anon: 36853, file: 904 });
        assert_eq!(m[1].path, "/pagelab/assess-7-0");
        assert_eq!(m[1].nodes[0].max_seq(), Some(6));
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let e = parse("memcg x /\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("memcg 1 /\n          0      27456          0       1232\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(parse(" node 0\n").is_err());
        assert!(parse("").unwrap().is_empty());
    }
}
