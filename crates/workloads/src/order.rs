//! The order arms run in. Round-robin inside each repeat puts a slow drift of
//! the machine on every arm alike; alternating the direction (A B, then B A:
//! ABBA) also puts what the previous run left behind (a warm page cache, a
//! half-drained swap device, a hot CPU) on every arm alike instead of always
//! on the second.

/// The arms of repeat `rep` (0-based): in the given order on even repeats,
/// reversed on odd ones.
pub fn abba<T: Clone>(arms: &[T], rep: usize) -> Vec<T> {
    let mut v = arms.to_vec();
    if rep % 2 == 1 {
        v.reverse();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternates_direction_by_repeat() {
        let arms = ["a", "b", "c"];
        let order: Vec<Vec<&str>> = (0..4).map(|r| abba(&arms, r)).collect();
        assert_eq!(order, [vec!["a", "b", "c"], vec!["c", "b", "a"], vec!["a", "b", "c"], vec!["c", "b", "a"]]);
        // Over a pair of repeats every arm has the same mean position.
        for x in arms {
            let pos: usize = order[..2].iter().map(|o| o.iter().position(|y| *y == x).unwrap()).sum();
            assert_eq!(pos, 2);
        }
    }
}
