//! Choosing the plan: every schedule over a grid of k, b and streams, the
//! fastest predicted plan that fits the device memory, and the runners-up.
//!
//! The grid is small on purpose (a few thousand plans) so that choosing
//! takes milliseconds for any extent: k is every value to 32, then steps of
//! about a quarter up to the step count, and the step count split evenly into
//! 1 to 16 blocks (so that 64 is tried for 128 steps); b is n / C for C = 1..16
//! and then chunk counts growing by about a quarter up to n; streams are 1
//! to 4 (mmtb with two chunks or more: 2 to 4, since the runtime keeps two
//! queues at one stream). Between stream counts of the same schedule, k and b
//! predicted within [`SLACK_TIE`] of each other ([`gives_way`]), more streams
//! win where their slack pays ([`slack_pays`]: a chunk's copies together outlast
//! its kernels, neither alone does), fewer streams elsewhere; other ties go to
//! the plan with less device memory.

use super::predict::{
    Config, Machine, Prediction, Schedule, device_bytes, normalise, predict_streams,
};
use super::workload::Workload;
use crate::plan::MAX_FUSED_STEPS;

/// The choice: the best plan and the next best ones.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The fastest plan that fits.
    pub best: Prediction,
    /// Runners-up, fastest first: the best plan of every other schedule that
    /// fits, and the next best of the winning schedule.
    pub alternatives: Vec<Prediction>,
    /// Plans predicted, over every steps-per-kernel count searched.
    pub considered: usize,
    /// Plans left out because they did not fit, over every count searched.
    pub too_big: usize,
    /// The memory cap used, in bytes (None: unknown, nothing was left out).
    pub cap: Option<u128>,
}

/// Streams tried.
const STREAMS: [u64; 4] = [1, 2, 3, 4];

/// How much faster (relatively) a plan must be predicted than the same schedule, k
/// and b with another stream count to be kept over it: 1 %. Within 1 % the model
/// cannot tell the two apart (its totals are a few per cent off), so
/// [`slack_pays`] decides which way the tie goes.
pub const SLACK_TIE: f64 = 0.01;

/// Whether more streams buy slack at this plan's schedule, k and b: where a
/// chunk's upload and download together outlast its kernels, or come within
/// [`SLACK_NEAR`] of them (U + D > 0.9 K), but neither alone outlasts them.
///
/// There a stream more is slack: with two queues a chunk's upload waits for the
/// download two chunks back, and copies vary from chunk to chunk (Jacobi-2D's
/// uploads took 9.2 to 11.4 ms around 10.0 in the trace of 2026-11-25,
/// tests/fixtures/traces) much more than kernels do, so a plan whose copies the model
/// puts just within the kernels' time loses, when they run long, what one with
/// another queue does not (Jacobi-2D 49152 x 61440 fuse 8 on the H100: 4 streams
/// 0.406 to 0.414 s, 3 streams 0.430 s; bench/RESULTS.md, eighth session).
/// Elsewhere more queues buy nothing and cost time the model does not price: where
/// both copies fit in the kernels' time two queues already keep the kernels busy,
/// and where one copy outlasts them the link sets the pace whatever the queues; more
/// queues then only put more copies on the link at once (the first chunks' uploads
/// share it; a chunk's hand-over waits behind uploads queued before it, the trace of
/// bench/RESULTS.md, tenth session, call 8). Every such tie in issue 27's sweeps
/// (the H100's of the eighth session, the H200's of the tenth) ran as fast or
/// fastest with the fewest streams: heat-3D, CIP-2D and Himeno without a budget
/// (Himeno ELARGE on the H200: S=2 0.351 s, S=4 0.371 s).
pub fn slack_pays(p: &Prediction) -> bool {
    let kernels = p.device_s();
    p.h2d_s < kernels && p.d2h_s < kernels && p.h2d_s + p.d2h_s > kernels * (1.0 - SLACK_NEAR)
}

/// How near (relatively) the copies together may come to the kernels' time before the
/// slack of more streams pays anyway: 10 %. The kernels' figure is a few per cent off
/// for a depth the profile measured and more for one it did not (a re-plan scales
/// those by what another depth measured: a spec-sheet profile refitted on an H100
/// priced Jacobi-2D's eight-step kernels 25 % slow, so the copies seemed to fit), and
/// two queues where the copies outlast the kernels cost more (Jacobi-2D on the H100:
/// 10 %) than more queues where they fit (Himeno, heat-3D: 3 to 6 %). Himeno ELARGE
/// on the H100 (copies 0.875 of the kernels' time) is the nearest of the sweeps'
/// that ran fastest with two streams.
pub const SLACK_NEAR: f64 = 0.10;

/// Whether `p` gives way to a plan of the same schedule, k and b among `all`
/// predicted at most [`SLACK_TIE`] slower: one with more streams where
/// [`slack_pays`], else one with fewer (the runtime's `tpace_model_choose` does the
/// same).
pub fn gives_way(p: &Prediction, all: &[Prediction]) -> bool {
    let more = slack_pays(p);
    all.iter().any(|q| {
        q.config.schedule == p.config.schedule
            && q.config.k == p.config.k
            && q.config.b == p.config.b
            && (if more {
                q.config.streams > p.config.streams
            } else {
                q.config.streams < p.config.streams
            })
            && q.total_s <= p.total_s * (1.0 + SLACK_TIE)
    })
}

/// Candidate k values for a run of `steps` steps.
pub fn k_candidates(steps: u64) -> Vec<u64> {
    let top = steps.max(1);
    let mut ks: Vec<u64> = (1..=top.min(32)).collect();
    let mut k = 32.0f64;
    while (k as u64) < top {
        k *= 1.25;
        ks.push((k.round() as u64).min(top));
    }
    ks.push(top);
    // Blocks of equal length: k = 62 would leave a third block of 4 steps for 128.
    ks.extend((1..=16).map(|blocks| top.div_ceil(blocks)));
    ks.sort_unstable();
    ks.dedup();
    ks
}

/// Candidate chunk widths for `n` planes.
pub fn b_candidates(n: u64) -> Vec<u64> {
    let n = n.max(1);
    let mut counts: Vec<u64> = (1..=16.min(n)).collect();
    let mut c = 16.0f64;
    while (c as u64) < n {
        c *= 1.25;
        counts.push((c.round() as u64).min(n));
    }
    let mut bs: Vec<u64> = counts.into_iter().map(|c| n.div_ceil(c)).collect();
    bs.sort_unstable();
    bs.dedup();
    bs
}

/// Order: faster first, then less memory.
fn faster(a: &Prediction, b: &Prediction) -> std::cmp::Ordering {
    a.total_s
        .total_cmp(&b.total_s)
        .then(a.device_bytes.cmp(&b.device_bytes))
}

/// Insert `p` into `top` (sorted by [`faster`]), keeping at most `keep`.
fn keep_best(top: &mut Vec<Prediction>, p: Prediction, keep: usize) {
    if top.len() == keep && faster(&p, &top[keep - 1]).is_ge() {
        return;
    }
    let at = top.partition_point(|q| faster(q, &p).is_le());
    top.insert(at, p);
    top.truncate(keep);
}

/// Choose the fastest plan under `cap` bytes of device memory (the
/// profile's memory when `cap` is None; no limit when neither is known).
/// Where the kernels can advance several steps each, plans with every step
/// count the kernels have and with one step per kernel compete (fused kernels
/// cost strips of device memory and recompute their tiles' halos, more the
/// deeper they fuse); ties go as [`depths`] lists the counts.
pub fn choose(w: &Workload, m: &Machine, cap: Option<u128>) -> Result<Choice, String> {
    choose_fused(w, m, cap, &k_candidates(w.steps), &Schedule::ALL)
}

/// [`choose`] with k taken from `ks` and the schedules from `schedules` (several
/// devices fix k for all of them and leave in-core and naive out).
pub fn choose_fused(
    w: &Workload,
    m: &Machine,
    cap: Option<u128>,
    ks: &[u64],
    schedules: &[Schedule],
) -> Result<Choice, String> {
    let mut best: Option<Result<Choice, String>> = None;
    // The work of every depth's search, reported with the winner's.
    let (mut considered, mut too_big) = (0, 0);
    for fuse in depths(w).into_iter().filter(|d| m.depth_priced(w, *d)) {
        let got = choose_among(&Workload { fuse, ..w.clone() }, m, cap, ks, schedules);
        if let Ok(c) = &got {
            considered += c.considered;
            too_big += c.too_big;
        }
        best = Some(match (best, got) {
            (None, got) => got,
            (Some(Ok(b)), Ok(g)) => Ok(if faster(&g.best, &b.best).is_lt() {
                g
            } else {
                b
            }),
            (Some(Ok(b)), Err(_)) => Ok(b),
            (Some(Err(_)), got) => got,
        });
    }
    best.expect("at least one step count").map(|c| Choice {
        considered,
        too_big,
        ..c
    })
}

/// The steps per kernel the search tries, in the order ties go: the workload's
/// own (`fuse`), then every other count its fused kernels have, from
/// `fuse_max` down to 2, then one step per kernel (the runtime's
/// `tpace_model_choose_fused`); the search takes those the profile prices
/// ([`super::Machine::depth_priced`]). The deeper a kernel fuses, the fewer times its
/// tile passes through device memory and the more halo columns and rows it
/// computes again (`fuse_overhead`, [`super::predict::fuse_row_overhead`]).
pub fn depths(w: &Workload) -> Vec<u64> {
    if w.fuse <= 1 {
        return vec![w.fuse];
    }
    let most = w.fuse_max.min(u64::from(MAX_FUSED_STEPS));
    std::iter::once(w.fuse)
        .chain((2..=most).rev().filter(|t| *t != w.fuse))
        .chain(std::iter::once(1))
        .collect()
}

/// [`choose`] for the workload's own number of steps per kernel only (what
/// `tpace tune` compares with, since its runs all fuse alike).
pub fn choose_at(w: &Workload, m: &Machine, cap: Option<u128>) -> Result<Choice, String> {
    choose_among(w, m, cap, &k_candidates(w.steps), &Schedule::ALL)
}

/// The search itself, over k in `ks` and the given schedules.
fn choose_among(
    w: &Workload,
    m: &Machine,
    cap: Option<u128>,
    ks: &[u64],
    schedules: &[Schedule],
) -> Result<Choice, String> {
    let cap = cap.or(m.memory_bytes.map(|b| b as u128));
    // The four best plans of each schedule, fastest first.
    let mut tops: Vec<Vec<Prediction>> = vec![Vec::new(); Schedule::ALL.len()];
    let mut considered = 0;
    let mut too_big = 0;
    let mut smallest: Option<u128> = None;
    let bs = b_candidates(w.n);
    for &schedule in schedules {
        let (k_list, b_list, s_list): (&[u64], &[u64], &[u64]) = match schedule {
            Schedule::Incore => (&[1], &[1], &[1]),
            Schedule::Naive => (&[1], &bs, &STREAMS),
            Schedule::Mm | Schedule::Mmtb => (ks, &bs, &STREAMS),
        };
        for &k in k_list {
            for &b in b_list {
                let base = Config {
                    schedule,
                    k,
                    b,
                    streams: 1,
                };
                let mut fitting: Vec<u64> = Vec::with_capacity(s_list.len());
                for &streams in s_list {
                    let Ok(c) = normalise(w, Config { streams, ..base }) else {
                        continue;
                    };
                    // mmtb runs two queues at one stream: the same plan as two.
                    if schedule == Schedule::Mmtb
                        && streams == 1
                        && s_list.contains(&2)
                        && super::chunks::count(w.n, c.b) > 1
                    {
                        continue;
                    }
                    let need = device_bytes(w, c);
                    smallest = Some(smallest.map_or(need, |s| s.min(need)));
                    if cap.is_some_and(|cap| need > cap) {
                        too_big += 1;
                    } else {
                        fitting.push(streams);
                    }
                }
                if !fitting.is_empty() {
                    considered += fitting.len();
                    let top = &mut tops[schedule as usize];
                    let all = predict_streams(w, m, base, &fitting)?;
                    for p in &all {
                        if !gives_way(p, &all) {
                            keep_best(top, p.clone(), 4);
                        }
                    }
                }
            }
        }
    }
    if tops.iter().all(Vec::is_empty) {
        return Err(format!(
            "no plan fits: the smallest needs {} of device memory, the cap is {}",
            super::predict::bytes(smallest.unwrap_or(0) as f64),
            super::predict::bytes(cap.unwrap_or(0) as f64)
        ));
    }
    let mut firsts: Vec<Prediction> = tops.iter().filter_map(|t| t.first().cloned()).collect();
    firsts.sort_by(faster);
    let best = firsts.remove(0);
    let mut alternatives = firsts;
    alternatives.extend(tops[best.config.schedule as usize].iter().skip(1).cloned());
    alternatives.sort_by(faster);
    Ok(Choice {
        best,
        alternatives,
        considered,
        too_big,
        cap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::predict::tests::{h100, jacobi};

    #[test]
    fn candidates_cover_the_ends() {
        let ks = k_candidates(2048);
        assert_eq!(&ks[..3], &[1, 2, 3]);
        assert_eq!(*ks.last().unwrap(), 2048);
        assert!(ks.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(k_candidates(0), vec![1]);
        // The step count split evenly: 128 steps in 2 blocks of 64, 3 of 43.
        assert!(k_candidates(128).contains(&64) && k_candidates(128).contains(&43));
        assert!(k_candidates(2048).contains(&1024) && k_candidates(2048).contains(&128));
        let bs = b_candidates(48_000);
        assert_eq!(*bs.last().unwrap(), 48_000);
        assert!(bs.contains(&24_000) && bs.contains(&3_000));
        assert_eq!(b_candidates(1), vec![1]);
    }

    #[test]
    fn the_chosen_plan_fits_and_beats_every_alternative() {
        let w = jacobi(48_000, 48_000, 2048);
        let m = h100();
        let c = choose(&w, &m, None).unwrap();
        let memory = m.memory_bytes.unwrap() as u128;
        assert_eq!(c.cap, Some(memory));
        assert!(c.best.device_bytes <= memory);
        // 18.4 GB fits the H100: in-core is a candidate, and whatever wins is
        // at least as fast (a pipelined schedule may hide in-core's upload).
        let incore = c
            .alternatives
            .iter()
            .chain([&c.best])
            .find(|p| p.config.schedule == Schedule::Incore)
            .expect("in-core fits and is listed");
        assert!(c.best.total_s <= incore.total_s);
        for a in &c.alternatives {
            assert!(a.total_s >= c.best.total_s);
            assert!(a.device_bytes <= 85_000_000_000);
        }
        assert!(c.alternatives.len() >= 3);
    }

    #[test]
    fn out_of_core_picks_mmtb_and_respects_the_cap() {
        // 48000^2 floats, two arrays: 18.4 GB; a 4 GB cap forces out-of-core.
        let w = jacobi(48_000, 48_000, 2048);
        let cap = 4_000_000_000u128;
        let c = choose(&w, &h100(), Some(cap)).unwrap();
        assert!(c.best.device_bytes <= cap, "{:?}", c.best);
        assert_eq!(c.best.config.schedule, Schedule::Mmtb);
        assert!(c.too_big > 0);
        assert!(c.alternatives.iter().all(|a| a.device_bytes <= cap));
    }

    #[test]
    fn a_tighter_cap_never_needs_more_memory() {
        let w = jacobi(20_000, 20_000, 512);
        let mut previous: Option<u128> = None;
        for cap_mb in [3_200u128, 1_600, 800, 400, 200, 100, 50, 25] {
            let cap = cap_mb * 1_000_000;
            match choose(&w, &h100(), Some(cap)) {
                Ok(c) => {
                    assert!(c.best.device_bytes <= cap);
                    if let Some(p) = previous {
                        assert!(c.best.device_bytes <= p, "cap {cap_mb} MB");
                    }
                    previous = Some(c.best.device_bytes);
                }
                Err(e) => assert!(e.contains("no plan fits"), "{e}"),
            }
        }
    }

    #[test]
    fn nothing_fits_says_how_much_is_needed() {
        let w = jacobi(1000, 1_000_000, 10);
        let e = choose(&w, &h100(), Some(1000)).unwrap_err();
        assert!(
            e.contains("smallest needs") && e.contains("cap is 1.00 kB"),
            "{e}"
        );
    }

    /// The search tries the workload's own step count first, then every other
    /// one its fused kernels have from the deepest down, then one; it picks the
    /// fastest of them, and a deeper kernel wins once its halo work costs less
    /// than the device-memory passes it saves.
    #[test]
    fn the_plan_chooses_the_steps_per_kernel() {
        let mut w = jacobi(48_000, 48_000, 128);
        (w.fuse, w.fuse_max, w.strip_elem_bytes) = (4, 8, 4);
        // Jacobi-2D's 256-wide rows: 2 t of every 256 columns are halo.
        (w.fuse_overhead, w.fuse_keep) = (vec![1.0; 9], vec![1; 9]);
        for t in 2..=8u64 {
            w.fuse_overhead[t as usize] = 256.0 / (256.0 - 2.0 * t as f64);
            w.fuse_keep[t as usize] = 256 - 2 * t;
        }
        assert_eq!(depths(&w), vec![4, 8, 7, 6, 5, 3, 2, 1]);
        assert_eq!(
            depths(&Workload {
                fuse: 1,
                ..w.clone()
            }),
            vec![1]
        );
        let mut m = h100();
        // The bandwidth figures' path: no measured kernel times.
        let measured = std::mem::take(&mut m.kernels);
        let pick = |m: &Machine, w: &Workload| {
            let c = choose(w, m, None).unwrap();
            let each: Vec<f64> = depths(w)
                .iter()
                .map(|t| {
                    choose_at(
                        &Workload {
                            fuse: *t,
                            ..w.clone()
                        },
                        m,
                        None,
                    )
                    .unwrap()
                    .best
                    .total_s
                })
                .collect();
            let least = each.iter().copied().fold(f64::INFINITY, f64::min);
            assert_eq!(c.best.total_s, least, "{each:?}");
            c.best.fuse
        };
        // Bound by device memory alone (no floor per point computed): the deepest wins.
        m.fused_point_s = 0.0;
        assert_eq!(pick(&m, &w), 8);
        // A floor per point computed above what memory costs at two steps (16 B a
        // point and step at 2008 GB/s: 4 ps at two steps): the least halo work wins;
        // between the two, where they cross.
        m.fused_point_s = 5e-12;
        assert_eq!(pick(&m, &w), 2);
        m.fused_point_s = 3e-12;
        assert_eq!(pick(&m, &w), 3);
        // Measured kernel times per depth ([[kernels]]) decide instead, wherever the
        // profile has them: the fastest measured depth wins.
        let figure = |fuse: u64, ps: f64| crate::model::profile::KernelFigure {
            elem: "float".into(),
            shape: "2d-r1".into(),
            fuse,
            ps,
            bytes: w.bytes_per_point,
            rows: 1536,
            blocks: None,
            segment_rows: None,
            launch_rows: None,
            kind: crate::model::profile::Provenance::Measured,
            source: "test".into(),
        };
        assert!(!measured.is_empty(), "the bundled h100 has [[kernels]]");
        m.kernels = (1..=8)
            .map(|t| figure(t, if t == 5 { 0.5 } else { 3.0 }))
            .collect();
        assert_eq!(pick(&m, &w), 5);
        m.kernels = (1..=8)
            .map(|t| figure(t, if t == 1 { 0.5 } else { 3.0 }))
            .collect();
        assert_eq!(pick(&m, &w), 1);
        // A profile that measured one to four steps only: five to eight are not searched,
        // however the bandwidth figures would price them (with no floor per point computed
        // the deepest would win, as above).
        m.fused_point_s = 0.0;
        m.kernels = (1..=4)
            .map(|t| figure(t, if t == 3 { 2.0 } else { 3.0 }))
            .collect();
        assert!(m.depth_priced(&w, 1) && m.depth_priced(&w, 4) && !m.depth_priced(&w, 5));
        assert_eq!(choose(&w, &m, None).unwrap().best.fuse, 3);
        // Another class's table leaves this one's depths to the bandwidth figures, all of them.
        m.kernels = vec![crate::model::profile::KernelFigure {
            shape: "3d-r1".into(),
            ..figure(4, 3.0)
        }];
        assert!(m.depth_priced(&w, 7));
        assert_eq!(choose(&w, &m, None).unwrap().best.fuse, 8);
        // There, a depth whose kernel has a multiprocessor to itself where shallower ones
        // share one is left out (heat-3D's tiles: three blocks at two steps, two at three
        // and four, one past four); where every depth has one block, none is.
        let mut tiles = w.clone();
        tiles.fuse_blocks_per_sm = vec![0, 0, 3, 2, 2, 1, 1, 1, 1];
        let priced: Vec<u64> = (1..=8).filter(|d| m.depth_priced(&tiles, *d)).collect();
        assert_eq!(priced, [1, 2, 3, 4]);
        assert_eq!(choose(&tiles, &m, None).unwrap().best.fuse, 4);
        tiles.fuse_blocks_per_sm = vec![0, 0, 1, 1, 1, 1, 1, 1, 1];
        assert!((1..=8).all(|d| m.depth_priced(&tiles, d)));
        // A measured table of the class decides alone.
        m.kernels = (1..=8).map(|t| figure(t, 3.0 - 0.1 * t as f64)).collect();
        tiles.fuse_blocks_per_sm = vec![0, 0, 3, 2, 2, 1, 1, 1, 1];
        assert_eq!(choose(&tiles, &m, None).unwrap().best.fuse, 8);
    }

    /// The search's work grows with the logarithm of the extents and the step
    /// count, never with them: its candidate lists are geometric past their
    /// first 32 k and 16 chunk counts, and it predicts each (schedule, k, b,
    /// streams) of them once per steps-per-kernel count. Work counted, not timed.
    #[test]
    fn the_search_predicts_a_bounded_number_of_plans_for_any_grid() {
        let log125 = |x: f64| x.max(1.0).ln() / 1.25f64.ln();
        for w in [
            jacobi(48_000, 48_000, 2048),
            jacobi(1_000_000, 16, 100_000),
            jacobi(3, 5, 1),
        ] {
            let ks = k_candidates(w.steps).len();
            let bs = b_candidates(w.n).len();
            assert!(
                ks as f64 <= 32.0 + 16.0 + log125(w.steps as f64 / 32.0) + 2.0,
                "{ks} k candidates for {} steps",
                w.steps
            );
            assert!(
                bs as f64 <= 16.0 + log125(w.n as f64 / 16.0) + 1.0,
                "{bs} chunk widths for {} planes",
                w.n
            );
            let c = choose(&w, &h100(), Some(1_000_000_000)).expect("a plan");
            let per_depth = 2 * ks * bs * STREAMS.len() + bs * STREAMS.len() + 1;
            let work = c.considered + c.too_big;
            assert!(
                work <= per_depth * depths(&w).len(),
                "{work} plans predicted, more than the {per_depth} candidates"
            );
            assert!(work > 0);
        }
    }
}
