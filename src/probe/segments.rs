//! What a fused launch costs beyond its points, from three timed runs of one
//! kernel: the chunk width and segments of the probe's own run, the same width
//! cut into more segments (`TPACE_FUSE_BLOCKS` at four waves), and half the width.
//! The model prices a launch over chunks of `b` rows cut into segments of `seg`
//! rows at `1 + segment_rows / seg + launch_rows / b` times a row's cost
//! ([`crate::model::predict::fuse_row_overhead`]); three runs fit the three unknowns.

/// One timed run: seconds per point and step, the segment length and chunk width
/// its launches had.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentRun {
    /// Kernel seconds per point and step of its steady chunks.
    pub seconds: f64,
    /// Rows of each segment (the model's `fuse_segment` for its launches).
    pub seg: u64,
    /// Chunk width.
    pub rows: u64,
}

/// What the runs say a segment and a launch cost, in rows: `(segment_rows,
/// launch_rows)`. `runs`: the probe's run, the same width aiming at more blocks,
/// and a narrower width. Where aiming at more blocks made no more segments (a 3-D
/// kernel, whose tiles alone fill a wave, has one segment a launch), the
/// segments' part cannot be told from the launch's and `segment_rows` is `None`
/// (the model then uses the rows a segment computes in vain, `in_vain`). Where the
/// three runs give a segment no cost or a negative one (more segments ran as fast or
/// faster: noise larger than that effect), the launch's cost still comes from the two
/// widths, as for alike segments: leaving it out priced narrow chunks' launches as
/// free (four H100s, 2026-11-26: 4 steps a kernel on 164-plane chunks took 1.9 ps a
/// point and step where the model said 1.1). `None` when not even that fits (a
/// negative or non-finite launch cost).
pub fn fit(runs: &[SegmentRun; 3], in_vain: f64) -> Option<(Option<f64>, f64)> {
    let fine = |v: f64| v.is_finite() && v >= 0.0;
    if runs[1].seg != runs[0].seg
        && let Some((segment, launch)) = fit_three(runs)
        && fine(segment)
        && fine(launch)
    {
        return Some((Some(segment), launch));
    }
    let launch = fit_widths(&runs[0], &runs[2], in_vain)?;
    fine(launch).then_some((None, launch))
}

/// seconds = X + X·segment / seg + X·launch / rows, linear in (X, X·segment, X·launch):
/// `(segment, launch)` in rows.
fn fit_three(runs: &[SegmentRun; 3]) -> Option<(f64, f64)> {
    let m = [row(&runs[0]), row(&runs[1]), row(&runs[2])];
    let v = [runs[0].seconds, runs[1].seconds, runs[2].seconds];
    let [x, xs, xl] = solve3(m, v)?;
    Some((xs / x, xl / x))
}

/// seconds = X (1 + in_vain / seg) + X·launch / rows: two widths give X and X·launch;
/// the launch's cost in rows.
fn fit_widths(a: &SegmentRun, b: &SegmentRun, in_vain: f64) -> Option<f64> {
    let (ra, rb) = (row(a), row(b));
    let (ca, cb) = (1.0 + in_vain * ra[1], 1.0 + in_vain * rb[1]);
    let det = ca * rb[2] - cb * ra[2];
    if det.abs() < 1e-300 || !det.is_finite() {
        return None;
    }
    let x = (a.seconds * rb[2] - b.seconds * ra[2]) / det;
    let xl = (ca * b.seconds - cb * a.seconds) / det;
    Some(xl / x)
}

/// A run's coefficients in the formula: 1, 1 / its segment, 1 / its width.
fn row(r: &SegmentRun) -> [f64; 3] {
    [1.0, 1.0 / r.seg as f64, 1.0 / r.rows as f64]
}

/// The solution of three linear equations (Cramer's rule); `None` when singular.
fn solve3(m: [[f64; 3]; 3], v: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: &[[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(&m);
    if d.abs() < 1e-300 || !d.is_finite() {
        return None;
    }
    let mut out = [0.0; 3];
    for (col, slot) in out.iter_mut().enumerate() {
        let mut mc = m;
        for (r, row) in mc.iter_mut().enumerate() {
            row[col] = v[r];
        }
        *slot = det(&mc) / d;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three runs as the model's formula prices them: `x` a row, `segment` and
    /// `launch` rows more, at the given (segment, chunk width) pairs.
    fn runs(x: f64, segment: f64, launch: f64, shapes: [(u64, u64); 3]) -> [SegmentRun; 3] {
        shapes.map(|(seg, rows)| SegmentRun {
            seconds: x * (1.0 + segment / seg as f64 + launch / rows as f64),
            seg,
            rows,
        })
    }

    /// The costs of the model's formula come back from runs it would predict: the
    /// H100's Jacobi-2D figures (26.5 rows a segment, 133 a launch) at its probe
    /// width, at four times the segments, and at half the width.
    #[test]
    fn three_runs_give_back_the_segment_and_launch_costs() {
        let three = runs(
            0.93e-12,
            26.5,
            133.0,
            [(1024, 2048), (256, 2048), (512, 1024)],
        );
        let (segment, launch) = fit(&three, 7.0).expect("fits");
        assert!((segment.unwrap() - 26.5).abs() < 1e-6, "{segment:?}");
        assert!((launch - 133.0).abs() < 1e-6, "{launch}");
    }

    /// One segment a launch whatever the blocks (3-D tiles): the launch's cost from
    /// the two widths, the segment's left to the rows computed in vain.
    #[test]
    fn alike_segments_give_the_launch_cost_alone() {
        let three = runs(2.6e-12, 1.0, 40.0, [(40, 40), (40, 40), (20, 20)]);
        let (segment, launch) = fit(&three, 1.0).expect("fits");
        assert_eq!(segment, None);
        assert!((launch - 40.0).abs() < 1e-6, "{launch}");
    }

    /// Noise that makes more segments cheaper gives a segment no cost, but the
    /// launch's cost still comes from the two widths: the H100's Jacobi-2D at four
    /// steps a kernel (eighth session's probe: 1.0478 / 1.0463 / 1.0957 ps), whose
    /// launch cost the four-H100 run showed (about 130 rows at 164-row chunks).
    #[test]
    fn cheaper_segments_still_give_the_launch_cost() {
        let three = [
            (1.0478, 512, 2048),
            (1.0463, 121, 2048),
            (1.0957, 256, 1024),
        ]
        .map(|(ps, seg, rows)| SegmentRun {
            seconds: ps * 1e-12,
            seg,
            rows,
        });
        let (segment, launch) = fit(&three, 3.0).expect("the widths fit");
        assert_eq!(segment, None);
        assert!((80.0..120.0).contains(&launch), "{launch}");
    }

    /// A narrower width that ran faster is no launch cost: nothing fits.
    #[test]
    fn runs_that_contradict_the_formula_fit_nothing() {
        let mut three = runs(1e-12, 26.5, 133.0, [(1024, 2048), (256, 2048), (512, 1024)]);
        three[1] = runs(1e-12, -80.0, 133.0, [(256, 2048); 3])[0];
        three[2].seconds = 0.9e-12;
        assert_eq!(fit(&three, 7.0), None);
    }
}
