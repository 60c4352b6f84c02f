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

/// The arms of repeat `rep` (0-based) in a Williams design: over `t` repeats
/// (`t` arms, even) or `2t` (odd), each arm runs in each position equally
/// often and follows each other arm equally often, so that what a run leaves
/// behind for the next one falls on every pair of arms alike, not only the
/// position (Williams 1949). Its first row is 0, 1, t−1, 2, t−2, …; row r adds
/// r to each (mod t); for odd t the second t rows are the first t reversed.
/// For two arms it is [`abba`]. Only a whole square balances: two rows of
/// four arms put e2 before e3 in both; [`balanced`] picks.
pub fn williams<T: Clone>(arms: &[T], rep: usize) -> Vec<T> {
    let t = arms.len();
    if t < 2 {
        return arms.to_vec();
    }
    let first = (0..t).map(|j| if j % 2 == 1 { j.div_ceil(2) } else { (t - j / 2) % t });
    let rows = if t % 2 == 0 { t } else { 2 * t };
    let r = rep % rows;
    let mut row: Vec<usize> = first.map(|x| (x + r % t) % t).collect();
    if r >= t {
        row.reverse();
    }
    row.into_iter().map(|i| arms[i].clone()).collect()
}

/// The rows of a whole Williams square of `t` arms.
pub fn square_rows(t: usize) -> usize {
    if t % 2 == 0 { t } else { 2 * t }
}

/// The arms of repeat `rep` of `reps`: a Williams square ([`williams`]) when
/// the repeats fill whole squares, else ABBA ([`abba`]), whose pairs of
/// repeats put each arm at the same mean position (an even count cancels a
/// position effect for every pair; a partial square does not).
pub fn balanced<T: Clone>(arms: &[T], rep: usize, reps: usize) -> Vec<T> {
    if arms.len() > 2 && reps > 0 && reps % square_rows(arms.len()) == 0 {
        williams(arms, rep)
    } else {
        abba(arms, rep)
    }
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

    /// Over a full square: each arm once (even t) or twice (odd t) in each
    /// position, and each ordered pair of different arms next to each other
    /// as often as any other.
    fn square_balances(t: usize) {
        let arms: Vec<usize> = (0..t).collect();
        let rows = square_rows(t);
        let square: Vec<Vec<usize>> = (0..rows).map(|r| williams(&arms, r)).collect();
        let mut at = vec![vec![0; t]; t];
        let mut next = vec![vec![0; t]; t];
        for row in &square {
            let mut sorted = row.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, arms, "a row is a permutation: {row:?}");
            for (pos, &a) in row.iter().enumerate() {
                at[a][pos] += 1;
            }
            for w in row.windows(2) {
                next[w[0]][w[1]] += 1;
            }
        }
        let each = rows / t;
        assert!(at.iter().flatten().all(|&c| c == each), "t = {t}: positions {at:?}");
        let pairs: Vec<usize> = (0..t)
            .flat_map(|a| (0..t).filter(move |&b| b != a).map(move |b| (a, b)))
            .map(|(a, b)| next[a][b])
            .collect();
        assert!(pairs.iter().all(|&c| c == pairs[0]) && pairs[0] > 0, "t = {t}: neighbours {next:?}");
        // The square repeats.
        assert_eq!(williams(&arms, rows), square[0]);
    }

    #[test]
    fn a_williams_square_balances_positions_and_neighbours() {
        for t in 2..=7 {
            square_balances(t);
        }
        let arms = ["e1", "e2", "e3", "e4"];
        assert_eq!(williams(&arms, 0), ["e1", "e2", "e4", "e3"]);
        assert_eq!(williams(&arms, 1), ["e2", "e3", "e1", "e4"]);
        // Two arms: ABBA.
        for r in 0..4 {
            assert_eq!(williams(&["a", "b"], r), abba(&["a", "b"], r));
        }
        assert_eq!(williams(&["a"], 3), ["a"]);
        assert!(williams::<u8>(&[], 1).is_empty());
    }

    #[test]
    fn a_partial_square_falls_back_to_abba() {
        let arms = ["e1", "e2", "e3", "e4"];
        // Four repeats of four arms: the square.
        assert_eq!(balanced(&arms, 1, 4), williams(&arms, 1));
        assert_eq!(balanced(&arms, 5, 8), williams(&arms, 5));
        // Two: ABBA, so e2 runs before e3 once and after it once.
        let two: Vec<Vec<&str>> = (0..2).map(|r| balanced(&arms, r, 2)).collect();
        assert_eq!(two, [vec!["e1", "e2", "e3", "e4"], vec!["e4", "e3", "e2", "e1"]]);
        let before = |o: &Vec<&str>, a: &str, b: &str| {
            o.iter().position(|x| *x == a).unwrap() < o.iter().position(|x| *x == b).unwrap()
        };
        assert_eq!(two.iter().filter(|o| before(o, "e2", "e3")).count(), 1);
        // Williams' first two rows would have put e2 first both times.
        assert!((0..2).all(|r| before(&williams(&arms, r), "e2", "e3")));
        // Three arms fill a square in six repeats.
        assert_eq!(balanced(&["a", "b", "c"], 3, 6), williams(&["a", "b", "c"], 3));
        assert_eq!(balanced(&["a", "b", "c"], 1, 3), abba(&["a", "b", "c"], 1));
        assert_eq!(balanced(&["a", "b"], 1, 4), ["b", "a"]);
    }
}
