use super::*;
use crate::model::profile::KernelFigure;
use crate::model::profile::Profile;
use crate::model::workload::{ArrayLoad, Movement};

pub(crate) fn h100() -> Machine {
    Machine::from_profile(&Profile::bundled("h100").unwrap()).unwrap()
}

/// A Jacobi-like workload: `a` moves both ways, `work` is a temporary.
pub(crate) fn jacobi(n: u64, plane: u64, steps: u64) -> Workload {
    Workload {
        n,
        plane,
        steps,
        arrays: vec![
            ArrayLoad {
                name: "work".into(),
                elem_bytes: 4,
                movement: Movement::Temporary,
                unread: false,
                to_root: false,
            },
            ArrayLoad {
                name: "a".into(),
                elem_bytes: 4,
                movement: Movement::InOut,
                unread: false,
                to_root: false,
            },
        ],
        h_lo: 1,
        h_hi: 1,
        skew: 2,
        flops_per_point: 4.0,
        bytes_per_point: 16.0,
        kernels_per_step: 2,
        handover_below: 2,
        upload_above: 1,
        extra_bytes_per_point: 0,
        fuse: 1,
        fuse_max: 1,
        fuse_overhead: vec![1.0; 5],
        strip_elem_bytes: 0,
        fuse_keep: vec![1; 5],
        fuse_blocks_per_sm: vec![0; 5],
        elem: "float".into(),
        shape: "2d-r1".into(),
    }
}

/// One array moving both ways, one read-only coefficient array, halo h both ways.
fn stencil(n: u64, plane: u64, steps: u64, h: u64) -> Workload {
    Workload {
        n,
        plane,
        steps,
        arrays: vec![
            ArrayLoad {
                name: "u".into(),
                elem_bytes: 8,
                movement: Movement::InOut,
                unread: false,
                to_root: false,
            },
            ArrayLoad {
                name: "coef".into(),
                elem_bytes: 4,
                movement: Movement::In,
                unread: false,
                to_root: false,
            },
        ],
        h_lo: h,
        h_hi: h,
        skew: h,
        flops_per_point: 10.0,
        bytes_per_point: 20.0,
        kernels_per_step: 1,
        handover_below: 2 * h,
        upload_above: h,
        extra_bytes_per_point: 0,
        fuse: 1,
        fuse_max: 1,
        fuse_overhead: vec![1.0; 5],
        strip_elem_bytes: 0,
        fuse_keep: vec![1; 5],
        fuse_blocks_per_sm: vec![0; 5],
        elem: "double".into(),
        shape: "3d-r1".into(),
    }
}

fn cfg(schedule: Schedule, k: u64, b: u64, streams: u64) -> Config {
    Config {
        schedule,
        k,
        b,
        streams,
    }
}

#[test]
fn naive_moves_the_whole_domain_both_ways_every_step() {
    let (n, plane, steps) = (1000, 300, 7);
    let w = stencil(n, plane, steps, 2);
    let p = predict(&w, &h100(), cfg(Schedule::Naive, 5, 100, 2)).unwrap();
    assert_eq!(p.config.k, 1, "naive is k = 1 whatever is asked");
    assert_eq!(p.blocks, steps);
    let c = 10u128;
    // In: u (8 B) and coef (4 B); out: u only. Upper ghosts h_hi per interior boundary.
    let up_planes = u128::from(n) + (c - 1) * 2;
    assert_eq!(p.h2d_bytes, u128::from(steps) * up_planes * 300 * 12);
    assert_eq!(p.d2h_bytes, u128::from(steps) * 1000 * 300 * 8);
    assert_eq!(p.redundant_points, 0);
    assert_eq!(p.points, u128::from(steps) * 1000 * 300);
}

#[test]
fn mm_redundant_points_are_h_k_k_minus_1_per_interior_boundary() {
    // h_lo = h_hi = h; b >= h (k-1) so only the two outer ends are clipped:
    // h k (k-1) per chunk, less half a chunk's worth at each end = (C - 1) chunks' worth.
    for (h, k, b) in [(1, 4, 50), (2, 3, 64), (1, 8, 100), (3, 5, 40)] {
        let (n, plane) = (1000, 77);
        let steps = 4 * k; // whole blocks only
        let w = stencil(n, plane, steps, h);
        let p = predict(&w, &h100(), cfg(Schedule::Mm, k, b, 3)).unwrap();
        let c = u128::from(n.div_ceil(b));
        let per_block = u128::from(h * k * (k - 1)) * (c - 1) * u128::from(plane);
        assert_eq!(p.redundant_points, 4 * per_block, "h={h} k={k} b={b}");
        assert_eq!(
            p.points,
            4 * per_block + u128::from(steps) * u128::from(n * plane)
        );
    }
}

#[test]
fn mm_uploads_upper_ghosts_and_carries_lower_ones_on_the_device() {
    let w = stencil(1000, 10, 8, 1);
    let p = predict(&w, &h100(), cfg(Schedule::Mm, 4, 100, 2)).unwrap();
    // 2 blocks; per block 1000 planes + 9 upper ghosts of h k = 4 planes, 12 B a plane-element.
    assert_eq!(p.h2d_bytes, 2 * (1000 + 9 * 4) * 10 * 12);
    assert_eq!(p.d2h_bytes, 2 * 1000 * 10 * 8);
    // Carry: lower ghosts of 4 planes at 9 boundaries, copied into and out of the carry buffer.
    assert_eq!(p.d2d_bytes, 2 * 2 * 9 * 4 * 10 * 12);
}

#[test]
fn mmtb_h2d_is_the_domain_once_per_block_and_the_handover_is_separate() {
    let (n, plane, k, b) = (1200, 50, 6, 200);
    let steps = 5 * k;
    let w = jacobi(n, plane, steps);
    let p = predict(&w, &h100(), cfg(Schedule::Mmtb, k, b, 3)).unwrap();
    let c = u128::from(n / b);
    let blocks = 5u128;
    // Only `a` moves in the first four blocks; the temporary also in the last.
    let lookahead = (c - 1) * u128::from(w.h_hi);
    let a_plane = u128::from(plane) * 4;
    let expected_h2d = (blocks - 1) * (u128::from(n) + lookahead) * a_plane
        + (u128::from(n) + lookahead) * 2 * a_plane;
    assert_eq!(p.h2d_bytes, expected_h2d);
    let expected_d2h = (blocks - 1) * u128::from(n) * a_plane + u128::from(n) * 2 * a_plane;
    assert_eq!(p.d2h_bytes, expected_d2h);
    // Hand-over m = skew (k-1) + h_lo + h_hi planes of both arrays, for every chunk but the first.
    let m = u128::from(w.skew * (k - 1) + w.h_lo + w.h_hi);
    assert_eq!(p.d2d_bytes, blocks * (c - 1) * m * 2 * a_plane);
    assert_eq!(p.redundant_points, 0);
    assert_eq!(p.points, u128::from(steps) * u128::from(n * plane));
}

#[test]
fn incore_moves_everything_once() {
    let w = jacobi(500, 40, 9);
    let p = predict(&w, &h100(), cfg(Schedule::Incore, 3, 7, 4)).unwrap();
    assert_eq!((p.config.k, p.config.b, p.config.streams), (9, 500, 1));
    assert_eq!(p.h2d_bytes, 500 * 40 * 8);
    assert_eq!(p.d2h_bytes, 500 * 40 * 8);
    assert_eq!(p.launches, 9 * 2);
    assert_eq!(p.device_bytes, 500 * 40 * 8);
    let serial = p.serial_s();
    assert!(
        (p.total_s - serial).abs() <= 1e-12 * serial,
        "nothing overlaps in core"
    );
}

#[test]
fn memory_formulas() {
    let w = jacobi(10_000, 1000, 100);
    let plane_all = 1000u128 * 8; // both arrays, 4 B each
    // naive/mm: slots x (b + (h_lo + h_hi) k) planes + carry h_lo k planes.
    let mm = predict(&w, &h100(), cfg(Schedule::Mm, 16, 500, 3)).unwrap();
    assert_eq!(mm.device_bytes, (3 * (500 + 2 * 16) + 16) * plane_all);
    let naive = predict(&w, &h100(), cfg(Schedule::Naive, 16, 500, 2)).unwrap();
    assert_eq!(naive.device_bytes, (2 * (500 + 2) + 1) * plane_all);
    // mmtb: slots x (m + b + h_hi), m = skew (k-1) + h_lo + h_hi.
    let mmtb = predict(&w, &h100(), cfg(Schedule::Mmtb, 16, 500, 3)).unwrap();
    assert_eq!(mmtb.device_bytes, 3 * ((2 * 15 + 2) + 500 + 1) * plane_all);
    // slots never exceed chunks; a single chunk needs no hand-over and no planes above.
    let one = predict(&w, &h100(), cfg(Schedule::Mmtb, 16, 10_000, 4)).unwrap();
    assert_eq!(one.slots, 1);
    assert_eq!(one.device_bytes, 10_000 * plane_all);
    // Two slots at least with several chunks, as the runtime keeps them.
    let two = predict(&w, &h100(), cfg(Schedule::Mmtb, 16, 500, 1)).unwrap();
    assert_eq!(two.device_bytes, 2 * ((2 * 15 + 2) + 500 + 1) * plane_all);
    // A swapped array's second buffer counts.
    let swapped = Workload {
        extra_bytes_per_point: 4,
        ..w.clone()
    };
    let s = predict(&swapped, &h100(), cfg(Schedule::Mmtb, 16, 500, 3)).unwrap();
    assert_eq!(s.device_bytes, 3 * ((2 * 15 + 2) + 500 + 1) * 1000 * 12);
}

#[test]
fn larger_k_never_increases_mmtb_transfer_volume() {
    for w in [jacobi(4000, 64, 100), stencil(3000, 33, 97, 2)] {
        let mut previous = u128::MAX;
        for k in 1..=w.steps {
            let b = 400; // at least the hand-over for every k here
            match predict(&w, &h100(), cfg(Schedule::Mmtb, k, b, 3)) {
                Ok(p) => {
                    let volume = p.h2d_bytes + p.d2h_bytes;
                    assert!(volume <= previous, "k={k}: {volume} > {previous}");
                    previous = volume;
                }
                Err(e) => assert!(e.contains("hand-over"), "{e}"),
            }
        }
    }
}

#[test]
fn overlap_never_loses_and_one_stream_overlaps_nothing() {
    let w = jacobi(8000, 8000, 64);
    let m = h100();
    for schedule in [Schedule::Naive, Schedule::Mm, Schedule::Mmtb] {
        let serial = predict(&w, &m, cfg(schedule, 8, 1000, 1)).unwrap();
        if schedule == Schedule::Mmtb {
            // The runtime keeps two queues for mmtb whatever TPACE_STREAMS says.
            let two = predict(&w, &m, cfg(schedule, 8, 1000, 2)).unwrap();
            assert_eq!((serial.slots, serial.total_s), (2, two.total_s));
        } else {
            assert!((serial.total_s - serial.serial_s()).abs() <= 1e-9 * serial.total_s);
        }
        for s in 2..=4 {
            let p = predict(&w, &m, cfg(schedule, 8, 1000, s)).unwrap();
            assert!(
                p.total_s <= serial.total_s * (1.0 + 1e-12),
                "{schedule:?} S={s}"
            );
            // Never faster than the busiest resource alone.
            let xfer = (p.h2d_bytes + p.d2h_bytes) as f64 / m.duplex_bps.unwrap();
            let floor = (p.kernel_s + p.launch_s + p.d2d_s).max(xfer);
            assert!(p.total_s >= floor * (1.0 - 1e-12), "{schedule:?} S={s}");
        }
    }
}

#[test]
fn mmtb_beats_naive_on_an_out_of_core_jacobi() {
    let w = jacobi(48_000, 48_000, 2048);
    let m = h100();
    let naive = predict(&w, &m, cfg(Schedule::Naive, 1, 6000, 3)).unwrap();
    let mmtb = predict(&w, &m, cfg(Schedule::Mmtb, 32, 6000, 3)).unwrap();
    // naive moves the grid both ways every step, mmtb's kernels bound it: the ratio
    // is a step's round trip over the link against a step's kernels, about 9 with the
    // probe's measured one-step kernels (16 bytes a point here: the copy sweep kept).
    let ratio = naive.total_s / mmtb.total_s;
    let per_step =
        (naive.h2d_bytes + naive.d2h_bytes) as f64 / m.duplex_bps.unwrap() / mmtb.kernel_s;
    assert!(
        ratio > 5.0 && (ratio / per_step - 1.0).abs() < 0.1,
        "{ratio} {per_step}"
    );
}

#[test]
fn impossible_configs_are_refused() {
    let w = jacobi(1000, 10, 10);
    assert!(predict(&w, &h100(), cfg(Schedule::Mm, 0, 10, 1)).is_err());
    assert!(predict(&w, &h100(), cfg(Schedule::Mm, 1, 10, 0)).is_err());
    assert!(predict(&w, &h100(), cfg(Schedule::Mmtb, 10, 0, 2)).is_err());
    // Chunks narrower than the hand-over are fine: the runtime runs them.
    let narrow = predict(&w, &h100(), cfg(Schedule::Mmtb, 10, 5, 2)).unwrap();
    assert_eq!(narrow.chunks, 200);
}

#[test]
fn check_fit_reports_the_numbers() {
    let w = jacobi(1000, 1000, 10);
    let p = predict(&w, &h100(), cfg(Schedule::Incore, 1, 1, 1)).unwrap();
    assert!(check_fit(&p, p.device_bytes).is_ok());
    let e = check_fit(&p, p.device_bytes - 1).unwrap_err();
    assert_eq!(e.needed, 8_000_000);
    assert_eq!(
        e.to_string(),
        "needs 8.00 MB of device memory, 8.00 MB available"
    );
}

#[test]
fn profiles_without_link_figures_are_refused_by_name() {
    let e = Machine::from_profile(&Profile::bundled("xeon-phi-5110p").unwrap()).unwrap_err();
    assert!(
        e.contains("lacks h2d_gbs, d2h_gbs, which the out-of-core model needs")
            && !e.contains("memory_gbs"),
        "{e}"
    );
    let bare = Profile::parse(
        "bare.toml",
        "name = \"bare\"\ndescription = \"d\"\narch = \"gpu\"\n\
         [memory_gb]\nvalue = 1\nkind = \"assumed\"\nsource = \"s\"\n",
    )
    .unwrap();
    let e = Machine::from_profile(&bare).unwrap_err();
    assert!(
        e.contains("machine profile `bare` lacks memory_gbs, h2d_gbs, d2h_gbs"),
        "{e}"
    );
    for name in ["h100", "h200", "k40c", "c2070"] {
        assert!(Machine::from_profile(&Profile::bundled(name).unwrap()).is_ok());
    }
}

/// The k40c profile against the tpace paper's own measurements (Table 3, 48000^2
/// Jacobi with its copy sweep, 2048 steps): in-core 32.2 GFLOPS (the profile's
/// `stencil_gbs` is derived from it, so this checks the derivation), and out of
/// core 28.5 GFLOPS at the paper's best plan, mm k = 32, b = 8000, which the
/// model, with the datasheet's bus and no host-side staging copies, puts about
/// 10 % higher.
#[test]
fn k40c_reproduces_the_tpace_papers_jacobi() {
    let m = Machine::from_profile(&Profile::bundled("k40c").unwrap()).unwrap();
    let w = jacobi(48000, 48000, 2048);
    let gflops = |c: Config| {
        let p = predict(&w, &m, c).unwrap();
        4.0 * 47998.0 * 47998.0 * 2048.0 / p.total_s / 1e9
    };
    let incore = gflops(cfg(Schedule::Incore, 2048, 48000, 1));
    assert!((incore / 32.2 - 1.0).abs() < 0.01, "{incore}");
    let ooc = gflops(cfg(Schedule::Mm, 32, 8000, 2));
    assert!(ooc > 28.5 && ooc < 28.5 * 1.15, "{ooc}");
}

#[test]
fn zero_steps_cost_nothing() {
    let w = jacobi(100, 10, 0);
    let p = predict(&w, &h100(), cfg(Schedule::Mm, 4, 10, 2)).unwrap();
    assert_eq!((p.blocks, p.h2d_bytes, p.points), (0, 0, 0));
    assert_eq!(p.total_s, 0.0);
}

/// The runtime's grouping of fused steps: groups of `fuse` steps, the rest one
/// kernel each.
#[test]
fn fused_steps_group_as_the_runtime_groups_them() {
    assert_eq!(kernel_groups(8, 1), 8);
    assert_eq!(kernel_groups(8, 4), 2);
    assert_eq!(kernel_groups(13, 4), 3 + 1); // 3 fused, 1 single
    assert_eq!(kernel_groups(3, 4), 3);
    assert_eq!(kernel_groups(0, 4), 0);
}

/// Strips and fusion: off for naive and for mmtb chunks narrower than a strip,
/// `k / fuse · (fuse - 1)` intermediate steps of `skew + h_lo` rows otherwise.
#[test]
fn fused_mmtb_strips_and_when_fusion_is_off() {
    let mut w = jacobi(1000, 600, 64);
    (w.skew, w.fuse, w.strip_elem_bytes) = (1, 4, 4);
    let mmtb = cfg(Schedule::Mmtb, 9, 100, 3);
    assert_eq!(fuse_for(&w, mmtb), 4);
    assert_eq!(strip_planes(&w, mmtb), 9 / 4 * 3 * 2);
    assert_eq!(fuse_for(&w, cfg(Schedule::Naive, 1, 100, 3)), 1);
    assert_eq!(
        fuse_for(&w, cfg(Schedule::Mmtb, 9, 1, 3)),
        1,
        "b < skew + h_lo"
    );
    assert_eq!(strip_planes(&w, cfg(Schedule::Mmtb, 9, 1, 3)), 0);
    assert_eq!(
        strip_planes(&w, cfg(Schedule::Mm, 9, 100, 3)),
        0,
        "mm hands nothing over"
    );
    assert_eq!(
        strip_planes(&w, cfg(Schedule::Mmtb, 9, 1000, 3)),
        0,
        "one chunk"
    );
    // The strips add to the device memory: one per slot (a chunk reads its predecessor's
    // where it lies).
    let plain = Workload {
        fuse: 1,
        ..w.clone()
    };
    let extra = device_bytes(&w, mmtb) - device_bytes(&plain, mmtb);
    assert_eq!(extra, 3 * 12 * 600 * 4); // 3 slots, 12 planes of 600 floats
}

/// A measured `[[kernels]]` entry for tests.
fn figure(elem: &str, shape: &str, fuse: u64, ps: f64, bytes: f64, rows: u64) -> KernelFigure {
    KernelFigure {
        elem: elem.into(),
        shape: shape.into(),
        fuse,
        ps,
        bytes,
        rows,
        blocks: None,
        segment_rows: None,
        launch_rows: None,
        kind: crate::model::profile::Provenance::Measured,
        source: "test".into(),
    }
}

/// The H100's link as DESIGN.md §5 has it, with the Jacobi-2D kernels as the
/// probe measured them on 2026-11-25 (fused 4 steps: 1.19 ps; one step: 4.62 ps),
/// when fused launches aimed at 2048 blocks (multiprocessors unknown to the model:
/// the runs the tests below reproduce were made so).
fn h100_measured() -> Machine {
    let mut m = h100();
    m.units = 0;
    m.h2d_bps = 49.5e9;
    m.d2h_bps = 55.0e9;
    m.duplex_bps = Some(88.9e9);
    m.kernels = vec![
        figure("float", "2d-r1", 1, 4.62, 8.0, 1536),
        figure("float", "2d-r1", 4, 1.19, 8.0, 1536),
    ];
    m
}

/// examples/jacobi2d.c on issue 19's grid (49152 x 61440 float, 128 steps), fused;
/// `download_work`: the swap's temporary comes back after the last step, as it did
/// before the liveness analysis (24.2 GB down instead of 12.1).
fn jacobi_example(download_work: bool) -> Workload {
    let src = include_str!("../../../examples/jacobi2d.c");
    let c = crate::plan::compile_source("jacobi2d.c", src).unwrap();
    let unit = c.unit(0);
    let mut w = Workload::from_unit(unit, &[49152, 61440], 128)
        .unwrap()
        .with_fusion(unit.plan.fusion.as_ref(), &unit.pipeline.arrays);
    for a in &mut w.arrays {
        a.unread &= !download_work;
    }
    w
}

#[test]
fn measured_kernel_figures_are_picked_by_type_shape_and_depth() {
    let m = h100_measured();
    let w = jacobi_example(false);
    assert_eq!(
        (w.elem.as_str(), w.shape.as_str(), w.fuse),
        ("float", "2d-r1", 4)
    );
    // The entry of the plan's depth, on chunks as wide as the measured ones.
    let four = m.fused_point_cost(&w, 4, 1536);
    assert!((four - 1.19e-12).abs() < 1e-18, "{four}");
    let one = m.fused_point_cost(&w, 1, 1536);
    assert!((one - 4.62e-12).abs() < 1e-18, "{one}");
    // Narrower chunks recompute more rows per row kept: dearer per point.
    assert!(m.fused_point_cost(&w, 4, 64) > four);
    // Twice the bytes per point (same class), fused: twice the time (instructions
    // grow with the arrays read). One step a kernel: the figure's memory time (8
    // bytes a point at the copy rate) twice, the rest once; twice the kernels a
    // step: the rest twice.
    let heavy = Workload {
        bytes_per_point: 16.0,
        ..w.clone()
    };
    assert!((m.fused_point_cost(&heavy, 4, 1536) - 2.0 * four).abs() < 1e-18);
    let memory = 8.0 / m.memory_bps;
    let heavy_one = m.fused_point_cost(&heavy, 1, 1536);
    assert!(
        (heavy_one - (one + memory)).abs() < 1e-18,
        "{heavy_one} {one} {memory}"
    );
    let two_kernels = Workload {
        kernels_per_step: 2,
        ..w.clone()
    };
    let two_cost = m.fused_point_cost(&two_kernels, 1, 1536);
    assert!(
        (two_cost - (2.0 * one - memory)).abs() < 1e-18,
        "{two_cost}"
    );
    // No entry for the depth, the type or the shape: today's bandwidth figures.
    let mut plain = h100_measured();
    plain.kernels.clear();
    for other in [
        Workload {
            fuse: 2,
            ..w.clone()
        },
        Workload {
            elem: "double".into(),
            ..w.clone()
        },
        Workload {
            shape: "3d-r1".into(),
            ..w.clone()
        },
    ] {
        let f = other.fuse;
        assert_eq!(
            m.fused_point_cost(&other, f, 1536),
            plain.fused_point_cost(&other, f, 1536),
            "{} {} {f}",
            other.elem,
            other.shape
        );
    }
    // The measured plan predicts the kernels the trace saw (0.461 s, issue 19).
    let p = predict(&w, &m, cfg(Schedule::Mmtb, 128, 1586, 3)).unwrap();
    assert!((p.kernel_s / 0.461 - 1.0).abs() < 0.05, "{}", p.kernel_s);
}

/// Fused launches aim at one wave, and a figure measured aiming at 2048 blocks is
/// priced at one wave by its segments and launches: with the segment and launch
/// costs fitted to them, the kernel times of the eight runs of 2026-11-25 (the
/// H100, Jacobi-2D 16384 x 61440, mmtb k=128, 8 steps a kernel, TPACE_FUSE_BLOCKS
/// 512 to 4096, b = 1586 and 793; bench/tables/2026-11-25-close.txt) relative to
/// the run at 2048 blocks and b = 1586, within 1.5 %.
#[test]
fn fused_launches_are_priced_by_their_segments_and_launches() {
    let mut w = jacobi_example(false);
    (w.n, w.fuse) = (16384, 8);
    let m = h100();
    let wave = m.fuse_wave(&w, 8);
    assert_eq!(
        wave,
        132 * 4,
        "132 multiprocessors, 4 blocks of the 8-step kernel each"
    );
    let f = KernelFigure {
        blocks: Some(2048),
        segment_rows: Some(26.5),
        launch_rows: Some(133.0),
        ..figure("float", "2d-r1", 8, 1.0, 8.0, 1586)
    };
    let kernels = [
        (1586, 512, 0.131208),
        (1586, 1024, 0.134377),
        (1586, 2048, 0.141629),
        (1586, 4096, 0.156495),
        (793, 512, 0.143306),
        (793, 1024, 0.151383),
        (793, 2048, 0.167832),
        (793, 4096, 0.184745),
    ];
    let at = |b: u64, blocks: u64| fuse_row_overhead(&w, b, 8, blocks, Some(&f));
    for (b, blocks, seconds) in kernels {
        let model = at(b, blocks) / at(1586, 2048);
        let measured = seconds / 0.141629;
        assert!(
            (model / measured - 1.0).abs() < 0.015,
            "b={b} blocks={blocks}: {model} {measured}"
        );
    }
    // Without the fitted costs (the rows computed in vain alone) the segments explain
    // a third of what 4096 blocks cost over 512.
    let bare = |b: u64, blocks: u64| fuse_row_overhead(&w, b, 8, blocks, None);
    let more = bare(1586, 4096) / bare(1586, 512) - 1.0;
    assert!(more < 0.5 * (0.156495 / 0.131208 - 1.0), "{more}");
    // The model aims where the runtime does: one wave, no partial one (512 here).
    let tiles = w.plane.div_ceil(w.fuse_keep[8]);
    assert_eq!((tiles, fuse_segment(1586, tiles, 8, 2, wave)), (256, 793));
    // Wider chunks fill whole waves too: four segments (two waves), not three (768
    // blocks, a partial second wave: 6 % slower, 2026-11-25); at most 1024 rows each
    // (one wave of 24576-row segments ran the in-core grid 4 % slower than 48 segments).
    assert_eq!(fuse_segment(2458, tiles, 8, 2, wave), 615);
    assert_eq!(fuse_segment(3072, tiles, 8, 2, wave), 768);
    assert_eq!(fuse_segment(1967, tiles, 8, 2, wave), 984);
    assert_eq!(fuse_segment(49152, tiles, 8, 2, wave), 1024);
    // Heat-3D's 3410 tiles alone fill more than a wave: 1152 rows in two segments.
    assert_eq!(fuse_segment(1152, 3410, 2, 2, wave), 576);
    // A figure measured at 2048 blocks costs less per point at one wave.
    let mut measured = h100();
    measured.kernels = vec![f.clone()];
    let one_wave = measured.fused_point_cost(&w, 8, 1586);
    assert!(one_wave < 1e-12 * 0.96, "{one_wave}");
}

/// One step a kernel: a figure with a launch cost prices narrow chunks dearer per
/// point, by `1 + launch_rows / b` against its own width's; without one, any width alike.
#[test]
fn one_step_launches_are_priced_by_their_launch_cost() {
    let mut w = jacobi_example(false);
    w.fuse = 1;
    let mut m = h100();
    m.kernels = vec![KernelFigure {
        launch_rows: Some(2.0),
        ..figure("float", "2d-r1", 1, 4.0, 8.0, 40)
    }];
    let at = |m: &Machine, b: u64| m.fused_point_cost(&w, 1, b);
    assert!((at(&m, 40) - 4.0e-12).abs() < 1e-20, "{}", at(&m, 40));
    let two = at(&m, 2) / at(&m, 40);
    assert!((two - 2.0 / (1.0 + 2.0 / 40.0)).abs() < 1e-12, "{two}");
    m.kernels[0].launch_rows = None;
    assert_eq!(at(&m, 2), at(&m, 40));
}

/// Issue 19's measurement: with the swap's temporary still downloaded (24.2 GB down,
/// 12.1 GB up) mmtb k=128 b=1586 ran 1.19x faster with 3 streams than with 2. With
/// 2 queues a chunk's upload waits for the download two chunks back on its queue, so
/// a chunk's share is at least (U + K + D) / 2 > K; with 3 it is K.
#[test]
fn a_third_stream_pays_where_two_queues_round_trip_too_slowly() {
    let m = h100_measured();
    let w = jacobi_example(true);
    let ps = predict_streams(&w, &m, cfg(Schedule::Mmtb, 128, 1586, 1), &[2, 3, 4]).unwrap();
    let (two, three, four) = (ps[0].total_s, ps[1].total_s, ps[2].total_s);
    // Twice as much comes down as goes up (the temporary too).
    let ratio = ps[0].d2h_bytes as f64 / ps[0].h2d_bytes as f64;
    assert!((ratio - 2.0).abs() < 0.01, "{ratio}");
    let gain = two / three;
    assert!(gain > 1.15 && gain < 1.3, "S=2 {two} S=3 {three}: {gain}");
    // A fourth stream shortens nothing: the kernels bound S=3 already.
    assert_eq!(three, four);
    assert!(three < ps[1].kernel_s * 1.1, "{three}");
    // The search asks for more than two streams; the third and the fourth tie, and the
    // tie goes to the slack of the fourth (search::SLACK_TIE).
    let choice = crate::model::search::choose(&w, &m, Some(8 << 30)).unwrap();
    assert_eq!(choice.best.config.schedule, Schedule::Mmtb);
    assert_eq!(choice.best.config.streams, 4, "{:?}", choice.best.config);
}

/// Today's Jacobi (the temporary is not downloaded). With 4 steps per kernel (1.19 ps)
/// a chunk's U + D is about its K: every stream count keeps the kernels busy, and
/// 2, 3 and 4 streams ran within 0.8 % of each other (bench/RESULTS.md, 2026-11-25);
/// the copies come within search::SLACK_NEAR of the kernels' time, so the tie goes to
/// the most streams' slack (search::slack_pays). With 8 steps per kernel (0.98 ps, the
/// trace of 2026-11-25) U + D (about 19 ms) exceeds K (about 15 ms): with two queues a
/// chunk's upload waits for the download two chunks back and the round trip sets the
/// pace; S=2 ran in 0.440 to 0.449 s, S=3 in 0.404 s, and the model ranks them so.
#[test]
fn a_third_stream_pays_where_copies_outlast_the_kernels() {
    let m = h100_measured();
    let w = jacobi_example(false);
    let ps = predict_streams(&w, &m, cfg(Schedule::Mmtb, 128, 1586, 1), &[2, 3, 4]).unwrap();
    assert_eq!(ps[0].total_s, ps[1].total_s);
    assert_eq!(ps[1].total_s, ps[2].total_s);
    assert!(crate::model::search::slack_pays(&ps[0]), "{:?}", ps[0]);
    let choice = crate::model::search::choose(&w, &m, Some(8 << 30)).unwrap();
    assert_eq!(choice.best.config.streams, 4, "{:?}", choice.best.config);
    // Those runs' launches aimed at 2048 blocks, as the profile's figure was measured.
    let mut m = h100();
    m.units = 0;
    let w8 = Workload {
        fuse: 8,
        ..w.clone()
    };
    let ps = predict_streams(&w8, &m, cfg(Schedule::Mmtb, 128, 1967, 1), &[2, 3, 4]).unwrap();
    let (two, three) = (ps[0].total_s, ps[1].total_s);
    // Since 2026-11-27 a slot's upload waits for 93.5 % of the download two chunks back
    // (its own planes, b - 128 of 1967), not all of it: 1.07 where those runs had 1.09 to 1.11.
    assert!(
        two > three * 1.05 && two < three * 1.16,
        "S=2 {two} S=3 {three}"
    );
    assert_eq!(three, ps[2].total_s);
    // One chunk: nothing to overlap, every stream count alike.
    let one = predict_streams(&w, &m, cfg(Schedule::Mmtb, 128, 49152, 1), &[1, 2, 3, 4]).unwrap();
    assert!(
        one.iter()
            .all(|p| p.slots == 1 && p.total_s == one[0].total_s)
    );
    let serial = one[0].h2d_s + one[0].kernel_s + one[0].launch_s + one[0].d2d_s + one[0].d2h_s;
    assert!((one[0].total_s / serial - 1.0).abs() < 1e-9);
}

/// Issue 19 item 1, with the figures of a steady chunk as the trace measured them
/// (Jacobi-2D 49152 x 61440, mmtb k=128 b=1967 fuse 8, 2026-11-25: U 10.0, K 15.1, D
/// 9.0 ms): the model ranks three streams ahead of two, by more than the slack tie.
#[test]
fn the_traced_jacobi_chunk_ranks_three_streams_ahead_of_two() {
    let m = h100();
    let (up, k, down) = (10.0e-3 * m.h2d_bps, 15.1e-3, 9.0e-3 * m.d2h_bps);
    let two = pipeline(&m, 25, 2, up, k, down, 1.0);
    let three = pipeline(&m, 25, 3, up, k, down, 1.0);
    let four = pipeline(&m, 25, 4, up, k, down, 1.0);
    assert!(
        two > three * (1.0 + crate::model::search::SLACK_TIE),
        "S=2 {two} S=3 {three}"
    );
    // Two queues: a chunk's share is its round trip over two, (U + K + D) / 2 = 17.05 ms,
    // and a little more where the copies meet (the trace: 17.35); three: the kernels.
    let s2 = steady(&m, 2, up, k, down, 1.0);
    assert!(s2.cycle_s > 17.05e-3 && s2.cycle_s < 17.6e-3, "{s2:?}");
    assert!(s2.overlap_s > 0.0);
    assert_eq!(steady(&m, 3, up, k, down, 1.0).cycle_s, k);
    assert_eq!(three, four);
}

/// Copies that must meet share the link: with U = K = D = 1 s and two queues they
/// overlap by U + D - T and each loses 1 - duplex / (h2d + d2h) of that time; the
/// fixed point is o = (A - (A + K) / S) / (1 - σ + σ / S), σ twice the loss, A = U + D.
#[test]
fn copies_that_must_meet_share_the_link() {
    let mut m = h100();
    (m.h2d_bps, m.d2h_bps, m.duplex_bps) = (1e9, 1e9, Some(1.5e9));
    let st = steady(&m, 2, 1e9, 1.0, 1e9, 1.0);
    let sigma = 2.0 * 0.25;
    let o = (2.0 - 3.0 / 2.0) / (1.0 - sigma + sigma / 2.0);
    assert!((st.overlap_s - o).abs() < 1e-3, "{st:?} against {o}");
    assert!(
        (st.cycle_s - (3.0 + sigma * o) / 2.0).abs() < 1e-3,
        "{st:?}"
    );
    assert!((st.upload_s - (1.0 + 0.25 * o)).abs() < 1e-3, "{st:?}");
    // Without a duplex figure, or with copies that fit beside the kernels, nothing stretches.
    m.duplex_bps = None;
    assert_eq!(steady(&m, 2, 1e9, 1.0, 1e9, 1.0).cycle_s, 1.5);
    m.duplex_bps = Some(1.5e9);
    let fit = steady(&m, 2, 0.4e9, 1.0, 0.4e9, 1.0);
    assert_eq!((fit.cycle_s, fit.overlap_s, fit.upload_s), (1.0, 0.0, 0.4));
}

/// Issue 19 item 3: the chunk width trades the pipeline's fill and drain (one chunk's
/// upload before the first kernel, its download after the last: U + D of a chunk,
/// so proportional to b) against what every chunk costs once (launches, hand-overs)
/// and the rows narrow chunks recompute. With three streams the kernels bound the
/// steady state, and the total is exactly the kernel chain plus one chunk's U + D.
#[test]
fn the_chunk_width_trades_fill_and_drain_against_launches() {
    let m = h100();
    let w = jacobi_example(false);
    let best_b = |m: &Machine| {
        crate::model::search::b_candidates(w.n)
            .into_iter()
            .filter(|b| (64..=12288).contains(b))
            .map(|b| (b, predict(&w, m, cfg(Schedule::Mmtb, 128, b, 3)).unwrap()))
            .min_by(|x, y| x.1.total_s.total_cmp(&y.1.total_s))
            .unwrap()
    };
    let (b, p) = best_b(&m);
    assert!(
        b > 64 && b < 12288,
        "the best width is inside the range: {b}"
    );
    let chain = p.kernel_s + p.launch_s + p.d2d_s;
    let fill = (p.h2d_s + p.d2h_s) / p.chunks as f64;
    assert!(
        ((p.total_s - chain) / fill - 1.0).abs() < 1e-9,
        "total {} chain {chain} fill and drain {fill}",
        p.total_s
    );
    // Dearer launches: fewer, wider chunks. Free launches and hand-overs: narrower.
    let mut dear = m.clone();
    dear.launch_s *= 100.0;
    assert!(best_b(&dear).0 > b, "{} against {b}", best_b(&dear).0);
    let mut cheap = m.clone();
    cheap.launch_s = 0.0;
    cheap.memory_bps *= 1e6;
    assert!(best_b(&cheap).0 <= b, "{} against {b}", best_b(&cheap).0);
}

/// The steady-state cycle itself: the longest of kernels, uploads, downloads, the
/// link both ways and a queue's round trip over S chunks.
#[test]
fn the_cycle_is_the_executors_longest_round() {
    let mut m = h100();
    m.h2d_bps = 1e9;
    m.d2h_bps = 1e9;
    m.duplex_bps = None;
    // U = K = D = 1 s: two queues need 1.5 s a chunk, three or four 1 s.
    assert_eq!(steady(&m, 2, 1e9, 1.0, 1e9, 1.0).cycle_s, 1.5);
    assert_eq!(steady(&m, 3, 1e9, 1.0, 1e9, 1.0).cycle_s, 1.0);
    assert_eq!(steady(&m, 4, 1e9, 1.0, 1e9, 1.0).cycle_s, 1.0);
    // Kernels longer than both copies together: one more stream changes nothing.
    assert_eq!(steady(&m, 2, 1e9, 3.0, 1e9, 1.0).cycle_s, 3.0);
    assert_eq!(steady(&m, 3, 1e9, 3.0, 1e9, 1.0).cycle_s, 3.0);
    // Copies much longer than kernels: the link bounds; both ways at once share it.
    m.duplex_bps = Some(1.5e9);
    assert_eq!(steady(&m, 4, 1e9, 0.1, 1e9, 1.0).cycle_s, 2.0 / 1.5);
    // Pipeline: the first chunk whole, then a cycle a chunk; one queue serial.
    assert_eq!(pipeline(&m, 5, 1, 1e9, 1.0, 1e9, 1.0), 15.0);
    assert_eq!(
        pipeline(&m, 5, 3, 1e9, 1.0, 1e9, 1.0),
        3.0 + 4.0 * (2.0 / 1.5)
    );
}

/// A heat-3D chunk of this session's trace (1152 x 1536 x 1728, mmtb k=64 b=72 S=2 fuse
/// 4, 8G, an H100, 2026-11-27: U 17, K 23.2 with its hand-over, D 14.9 ms): with the
/// slot's next upload waiting for the whole download, two queues cost the round trip
/// over two (27.6 ms a chunk); waiting only for the chunk's own planes (8 of its 72:
/// the rest lag 63 steps behind), the kernels bound it.
#[test]
fn an_upload_that_waits_for_part_of_a_download_frees_two_queues() {
    let m = h100();
    let (up, k, down) = (17.0e-3 * m.h2d_bps, 23.2e-3, 14.9e-3 * m.d2h_bps);
    let whole = steady(&m, 2, up, k, down, 1.0).cycle_s;
    assert!(whole > 27.5e-3 && whole < 28.5e-3, "{whole}");
    assert_eq!(steady(&m, 2, up, k, down, 8.0 / 72.0).cycle_s, k);
    // The hand-over still waits for the whole download: kernels and download over two.
    let long_download = steady(&m, 2, up, k, 2.0 * k * m.d2h_bps, 0.0).cycle_s;
    assert!(long_download >= (k + 2.0 * k) / 2.0, "{long_download}");
}

/// The part of a chunk's download the next upload waits for: an mmtb chunk's own planes
/// (its width less the hand-over's planes), all of it for mm and for a single chunk.
#[test]
fn the_first_part_of_a_download_is_the_chunks_own_planes() {
    let w = stencil(1152, 1536 * 1728, 128, 1);
    let c = Config {
        schedule: Schedule::Mmtb,
        k: 64,
        b: 72,
        streams: 2,
    };
    let lag = handover(&w, 64);
    assert!(lag < 72);
    let f = out_first(&w, c, 16, 64);
    assert!((f - (72 - lag) as f64 / 72.0).abs() < 1e-12, "{f}");
    assert_eq!(out_first(&w, Config { b: 40, ..c }, 30, 64), 0.0);
    assert_eq!(out_first(&w, c, 1, 64), 1.0);
    assert_eq!(
        out_first(
            &w,
            Config {
                schedule: Schedule::Mm,
                ..c
            },
            16,
            64
        ),
        1.0
    );
}
