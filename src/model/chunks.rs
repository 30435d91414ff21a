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

/// Swap the sums: each interior chunk boundary at distance `d` from the end
/// it faces contributes `sum_{left<k} min(h left, d)`. Boundaries at least
/// `h (k-1)` away contribute the full triangle `h k (k-1) / 2`; the near
/// ones have distances in arithmetic progression, summed in closed form
/// with floor sums, so the cost is logarithmic whatever n, b and k are.
fn over_steps(n: u64, b: u64, h: u64, k: u64, up: bool) -> u128 {
    let c = count(n, b);
    if c <= 1 || h == 0 || k <= 1 {
        return 0;
    }
    let reach = h * (k - 1);
    let triangle = u128::from(h) * u128::from(k) * u128::from(k - 1) / 2;
    // Distances, nearest first: d0 + i b for i = 0..C-2. Upward the nearest
    // boundary is the top of chunk C-2, as far from n as the last chunk is
    // wide; downward it is the bottom of chunk 1, b from 0.
    let d0 = if up { n - (c - 1) * b } else { b };
    let near = if reach > d0 {
        (reach - d0).div_ceil(b).min(c - 1)
    } else {
        0
    };
    u128::from(c - 1 - near) * triangle + near_sum(d0, b, h, k, near)
}

/// `sum_{i<cnt} [h q (q+1) / 2 + (k-1-q) d]` with `d = d0 + i b` and
/// `q = floor(d / h)`: the near boundaries' ghost planes over a block
/// (`q + 1` steps have a ghost `h left <= d`, the rest are clipped at `d`).
fn near_sum(d0: u64, b: u64, h: u64, k: u64, cnt: u64) -> u128 {
    if cnt == 0 {
        return 0;
    }
    let (d0, b, h, k, cnt) = (
        i128::from(d0),
        i128::from(b),
        i128::from(h),
        i128::from(k),
        i128::from(cnt),
    );
    let s = floor_sums(b, d0, h, cnt - 1);
    let sum_d = cnt * d0 + b * cnt * (cnt - 1) / 2;
    let total = h * (s.squares + s.plain) / 2 + (k - 1) * sum_d - (d0 * s.plain + b * s.weighted);
    u128::try_from(total).expect("a count of planes is not negative")
}

/// Floor sums over `i = 0..=n` of `q_i = floor((a i + b) / c)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FloorSums {
    /// `sum q_i`
    plain: i128,
    /// `sum i q_i`
    weighted: i128,
    /// `sum q_i^2`
    squares: i128,
}

/// The Euclid-like recursion for [`FloorSums`] (a, b >= 0, c > 0, n >= 0).
fn floor_sums(a: i128, b: i128, c: i128, n: i128) -> FloorSums {
    let s1 = n * (n + 1) / 2;
    let s2 = n * (n + 1) * (2 * n + 1) / 6;
    if a == 0 {
        let q = b / c;
        return FloorSums {
            plain: (n + 1) * q,
            weighted: q * s1,
            squares: (n + 1) * q * q,
        };
    }
    if a >= c || b >= c {
        let (qa, qb) = (a / c, b / c);
        let r = floor_sums(a % c, b % c, c, n);
        return FloorSums {
            plain: r.plain + qa * s1 + qb * (n + 1),
            weighted: r.weighted + qa * s2 + qb * s1,
            squares: r.squares
                + 2 * qb * r.plain
                + 2 * qa * r.weighted
                + qa * qa * s2
                + qb * qb * (n + 1)
                + 2 * qa * qb * s1,
        };
    }
    let m = (a * n + b) / c;
    if m == 0 {
        return FloorSums {
            plain: 0,
            weighted: 0,
            squares: 0,
        };
    }
    let r = floor_sums(c, c - b - 1, a, m - 1);
    let plain = n * m - r.plain;
    FloorSums {
        plain,
        weighted: (m * n * (n + 1) - r.squares - r.plain) / 2,
        squares: n * m * (m + 1) - 2 * r.weighted - 2 * r.plain - plain,
    }
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
    fn floor_sums_match_brute_force() {
        for a in 0..7 {
            for b in 0..9 {
                for c in 1..6 {
                    for n in 0..12 {
                        let q = |i: i128| (a * i + b) / c;
                        let want = FloorSums {
                            plain: (0..=n).map(q).sum(),
                            weighted: (0..=n).map(|i| i * q(i)).sum(),
                            squares: (0..=n).map(|i| q(i) * q(i)).sum(),
                        };
                        assert_eq!(floor_sums(a, b, c, n), want, "a={a} b={b} c={c} n={n}");
                    }
                }
            }
        }
    }

    #[test]
    fn huge_blocks_of_thin_chunks_are_cheap_and_exact() {
        // A million one-plane chunks and 100000 steps: brute force would be 10^11 terms.
        let (n, b, h, k) = (1_000_000u64, 1u64, 1u64, 100_000u64);
        // Boundary j (1..n-1) is j planes from the bottom: sum_{left<k} min(left, j).
        let per = |d: u128| {
            let k = u128::from(k);
            if d >= k - 1 {
                k * (k - 1) / 2
            } else {
                d * (d + 1) / 2 + (k - 1 - d) * d
            }
        };
        let want: u128 = (1..u128::from(n)).map(per).sum();
        assert_eq!(lower_over_steps(n, b, h, k), want);
        assert_eq!(upper_over_steps(n, b, h, k), want);
    }

    #[test]
    fn interior_boundaries_carry_full_ghosts() {
        // 10 chunks of 100, ghost 3: 9 interior boundaries each way.
        assert_eq!(upper(1000, 100, 3), 27);
        assert_eq!(lower(1000, 100, 3), 27);
        assert_eq!(count(1001, 100), 11);
    }
}
