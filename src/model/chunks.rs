//! Chunk arithmetic in closed form: how many ghost planes the chunks of a
//! cut axis carry in total, clipped at both ends of the axis the way the
//! runtime clips them (`tpace_win_lo` / `tpace_win_hi` in the runtime).
//!
//! The axis has `n` planes cut into `C = ceil(n / b)` chunks of `b` planes,
//! the last one possibly shorter. Chunk `c` owns `[c b, min((c+1) b, n))`.

/// Number of chunks.
pub fn count(n: u64, b: u64) -> u64 {
    n.div_ceil(b.max(1))
}

/// Sum of `j` for `j` in `a..=z` (zero when empty).
fn range_sum(a: u64, z: u64) -> u128 {
    if a > z {
        return 0;
    }
    (u128::from(a) + u128::from(z)) * u128::from(z - a + 1) / 2
}

/// Ghost planes above the chunks: sum over chunks of
/// `min(n, own_hi + g) - own_hi`.
pub fn upper(n: u64, b: u64, g: u64) -> u128 {
    let c = count(n, b);
    if c <= 1 || g == 0 {
        return 0;
    }
    // Chunk j-1 (j = 1..C-1) ends at j b < n; its ghost is min(g, n - j b).
    // Full ghosts where j b <= n - g.
    let full = if n >= g { ((n - g) / b).min(c - 1) } else { 0 };
    let partial_n = u128::from(c - 1 - full);
    u128::from(full) * u128::from(g) + partial_n * u128::from(n)
        - u128::from(b) * range_sum(full + 1, c - 1)
}

/// Ghost planes below the chunks: sum over chunks of `own_lo - max(0, own_lo - g)`.
pub fn lower(n: u64, b: u64, g: u64) -> u128 {
    let c = count(n, b);
    if c <= 1 || g == 0 {
        return 0;
    }
    // Chunk c (1..C-1) starts at c b; its ghost is min(g, c b).
    let first_full = g.div_ceil(b).max(1);
    let clipped_end = first_full.min(c) - 1; // chunks 1..=clipped_end are clipped
    u128::from(b) * range_sum(1, clipped_end) + u128::from(g) * u128::from(c - 1 - clipped_end)
}

/// `sum_{left=0}^{k-1} upper(n, b, h * left)`: the upper ghosts of the
/// shrinking windows of a block of k steps.
pub fn upper_over_steps(n: u64, b: u64, h: u64, k: u64) -> u128 {
    over_steps(n, b, h, k, true)
}

/// `sum_{left=0}^{k-1} lower(n, b, h * left)`.
pub fn lower_over_steps(n: u64, b: u64, h: u64, k: u64) -> u128 {
    over_steps(n, b, h, k, false)
}

/// Swap the sums: for each chunk boundary at distance `d` from the end it
/// faces, `sum_{left<k} min(h left, d)`; boundaries farther than `h (k-1)`
/// contribute the full triangle, so only the near ones are visited.
fn over_steps(n: u64, b: u64, h: u64, k: u64, up: bool) -> u128 {
    let c = count(n, b);
    if c <= 1 || h == 0 || k <= 1 {
        return 0;
    }
    let reach = h * (k - 1);
    let triangle = u128::from(h) * u128::from(k) * u128::from(k - 1) / 2;
    // Distances: upward, boundary j (1..C-1) is n - j b from the top; downward, c b from 0.
    let distance = |j: u64| if up { n - j * b } else { j * b };
    // Boundaries with distance < reach are "near"; only those are visited.
    let (start, end) = if up {
        // n - j b < reach  <=>  j b > n - reach
        let from = if n > reach { (n - reach) / b + 1 } else { 1 };
        (from.max(1), c)
    } else {
        // j b < reach  <=>  j < ceil(reach / b)
        (1, reach.div_ceil(b).min(c))
    };
    let near = end.saturating_sub(start);
    let mut sum = u128::from(c - 1 - near) * triangle;
    for j in start..end {
        let d = distance(j);
        let q = (d / h).min(k - 1); // steps whose ghost h*left fits in d
        sum += u128::from(h) * range_sum(0, q) + u128::from(k - 1 - q) * u128::from(d);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_upper(n: u64, b: u64, g: u64) -> u128 {
        (0..count(n, b))
            .map(|c| {
                let hi = ((c + 1) * b).min(n);
                u128::from((hi + g).min(n) - hi)
            })
            .sum()
    }

    fn brute_lower(n: u64, b: u64, g: u64) -> u128 {
        (0..count(n, b))
            .map(|c| {
                let lo = c * b;
                u128::from(lo - lo.saturating_sub(g))
            })
            .sum()
    }

    #[test]
    fn closed_forms_match_brute_force() {
        for n in [1, 2, 5, 17, 64, 100] {
            for b in 1..=n + 2 {
                for g in 0..=n + 3 {
                    assert_eq!(
                        upper(n, b, g),
                        brute_upper(n, b, g),
                        "upper n={n} b={b} g={g}"
                    );
                    assert_eq!(
                        lower(n, b, g),
                        brute_lower(n, b, g),
                        "lower n={n} b={b} g={g}"
                    );
                }
                for h in 0..4 {
                    for k in 1..8 {
                        let bu: u128 = (0..k).map(|l| brute_upper(n, b, h * l)).sum();
                        let bl: u128 = (0..k).map(|l| brute_lower(n, b, h * l)).sum();
                        assert_eq!(upper_over_steps(n, b, h, k), bu, "n={n} b={b} h={h} k={k}");
                        assert_eq!(lower_over_steps(n, b, h, k), bl, "n={n} b={b} h={h} k={k}");
                    }
                }
            }
        }
    }

    #[test]
    fn interior_boundaries_carry_full_ghosts() {
        // 10 chunks of 100, ghost 3: 9 interior boundaries each way.
        assert_eq!(upper(1000, 100, 3), 27);
        assert_eq!(lower(1000, 100, 3), 27);
        assert_eq!(count(1001, 100), 11);
    }
}
