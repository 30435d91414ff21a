//! `tpace probe`'s kernel part: the time the kernels tpace emits take per grid point
//! and step, for every element type, stencil shape class and number of steps per
//! kernel the translation offers (the profile's `[[kernels]]`, which the model
//! prices kernels by).
//!
//! Rather than hand-written kernels, which would drift from what tpace emits, the
//! probe translates small bundled stencil programs (`kernels/*.c`) with tpace itself
//! to CUDA, builds them, and runs each out-of-core the way plans run (mmtb, one block,
//! chunks as wide as the model's plans take, three streams) with `TPACE_FUSE` forcing
//! the steps per kernel and `TPACE_TRACE` recording the timeline. The copies run
//! meanwhile, as they do in a plan. Every depth the translation has kernels for is
//! timed (2-D rows fuse deeper than 3-D tiles); a depth the device refuses ends the
//! list for that program.
//!
//! The figure comes from the *steady* chunks alone ([`steady_kernel_seconds`]): not
//! the first ones, whose windows the grid's start clips (mmtb's hand-over reaches k
//! planes below a chunk), nor the last, which computes the planes above it too. A
//! plan over a large grid is nearly all steady chunks (23 of Jacobi-2D's 25), and the
//! first probe, which divided all chunks' busy time by the grid's updates on 4 chunks
//! of 1024 planes, said 1.18 ps per point and step at 8 steps per kernel where the
//! steady chunks of the 49152 x 61440 run (2026-11-25 10:13 UTC, b = 1967) took 0.98:
//! short runs of few, narrow chunks do not stand for long runs of wide ones. The
//! launch gaps (`launch_overhead_us` per launch, which the model adds on its own) are
//! taken out of the figure.

use crate::back::Target;
use crate::driver::Failure;
use crate::driver::run::{Flavour, Toolchain, build, parse_report};
use crate::model::Workload;
use std::path::Path;
use std::process::Command;

/// A shape class's probe program: class name, file name, text (with `REAL` and the
/// extents' `@NAME@` placeholders), and the placeholders in extent order.
struct Program {
    shape: &'static str,
    file: &'static str,
    text: &'static str,
    extents: &'static [&'static str],
}

/// The probe programs, one per shape class.
const PROGRAMS: [Program; 3] = [
    Program {
        shape: "2d-r1",
        file: "jacobi2d.c",
        text: include_str!("kernels/jacobi2d.c"),
        extents: &["@X@", "@Y@"],
    },
    Program {
        shape: "3d-r1",
        file: "heat3d.c",
        text: include_str!("kernels/heat3d.c"),
        extents: &["@NX@", "@NY@", "@NZ@"],
    },
    Program {
        shape: "2d-r2",
        file: "star2d.c",
        text: include_str!("kernels/star2d.c"),
        extents: &["@X@", "@Y@"],
    },
];

/// Element types probed.
const ELEMS: [&str; 2] = ["float", "double"];

/// One measured kernel time, before it gets its date and device in the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRun {
    /// Element type.
    pub elem: String,
    /// Shape class.
    pub shape: String,
    /// Steps per kernel the run reported.
    pub fuse: u64,
    /// Picoseconds of kernel busy time per grid point and step.
    pub ps: f64,
    /// Device bytes per point and step of the program (the model's count).
    pub bytes: f64,
    /// Chunk width of the run.
    pub rows: u64,
    /// Blocks its fused launches aimed at (one wave: the device's multiprocessors
    /// times the blocks that share one; 0: one step per kernel, or unknown).
    pub blocks: u64,
    /// Rows a segment of its launches costs beyond its own, where the probe fitted it
    /// ([`super::segments`]; the fused depths near each program's fastest, [`near_fastest`]).
    pub segment_rows: Option<f64>,
    /// Rows a launch costs beyond its segments', likewise.
    pub launch_rows: Option<f64>,
    /// What ran: program, grid, plan.
    pub what: String,
}

/// A probe program's grid: extents (outermost first), chunk width, steps. On a GPU
/// about 2 GB an array, with planes as wide as the benchmarks' (61440 columns in
/// 2-D, 1536 x 1728 in 3-D), chunks about as wide as the model's plans for those
/// grids under an 8 GB budget (Jacobi-2D float b = 1967, heat-3D float b = 38 to 47;
/// half the planes for double), and at least two steady chunks ([`steady_chunks`]:
/// 2-D at 128 steps has chunks 1 and 2 of 4, 3-D float at 64 steps chunks 2 and 3 of
/// 5, 3-D double chunk 3 of 5); small on the emulation.
fn grid(shape: &str, elem: &str, emulate: bool) -> (Vec<u64>, u64, u64) {
    let double = elem == "double";
    match (shape.starts_with("3d"), emulate) {
        (false, true) => (vec![64, 40], 16, 8),
        (true, true) => (vec![30, 12, 10], 6, 4),
        (false, false) if double => (vec![4096, 61440], 1024, 128),
        (false, false) => (vec![8192, 61440], 2048, 128),
        (true, false) if double => (vec![120, 1536, 1728], 24, 64),
        (true, false) => (vec![200, 1536, 1728], 40, 64),
    }
}

/// The steady chunks of an mmtb block of `steps` steps over `n` planes in chunks of
/// `b` (0-based, `[first, end)`): from the first whose windows the grid's start does
/// not clip (its lowest window, `handover` planes below it, is on the grid) to the
/// last but one.
pub fn steady_chunks(n: u64, b: u64, handover: u64) -> (u64, u64) {
    let count = n.div_ceil(b.max(1));
    let first = handover.div_ceil(b.max(1)).max(1);
    (first, count.saturating_sub(1).max(first))
}

/// One operation of a `TPACE_TRACE` file (columns chunk, first_step, steps, queue,
/// op, start_ms, end_ms, bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceOp {
    /// The chunk the operation belongs to.
    pub chunk: u64,
    /// The first step of its block.
    pub first_step: u64,
    /// `upload`, `handover`, `kernels` or `download`.
    pub op: String,
    /// Start, in milliseconds from the pipeline's start.
    pub start_ms: f64,
    /// End, likewise.
    pub end_ms: f64,
    /// Bytes it moved (0 for kernels).
    pub bytes: f64,
}

/// The operations of a `TPACE_TRACE` file's text, one per line after the header:
/// `None` for a line that does not read as one.
pub fn trace_ops(trace: &str) -> impl Iterator<Item = Option<TraceOp>> + '_ {
    trace.lines().skip(1).map(|line| {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 8 {
            return None;
        }
        Some(TraceOp {
            chunk: f[0].parse().ok()?,
            first_step: f[1].parse().ok()?,
            op: f[4].to_string(),
            start_ms: f[5].parse().ok()?,
            end_ms: f[6].parse().ok()?,
            bytes: f[7].parse().ok()?,
        })
    })
}

/// Kernel seconds and chunks of the steady chunks `[first, end)` from a
/// `TPACE_TRACE` file's text, over every block the trace has (`None` for a trace
/// with a line that does not read, or no such kernels).
pub fn steady_kernel_seconds(trace: &str, first: u64, end: u64) -> Option<(f64, u64)> {
    let mut seconds = 0.0;
    let mut chunks = 0;
    for op in trace_ops(trace) {
        let op = op?;
        if op.op != "kernels" || op.chunk < first || op.chunk >= end {
            continue;
        }
        seconds += (op.end_ms - op.start_ms) * 1e-3;
        chunks += 1;
    }
    (chunks > 0).then_some((seconds, chunks))
}

/// A run's steady chunks as a `[[kernels]]` figure takes them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SteadyCost {
    /// The steady chunks, `[first, end)` ([`steady_chunks`]).
    first: u64,
    end: u64,
    /// Their kernels' seconds, as the trace has them.
    seconds: f64,
    /// Their launches (whose gaps the model adds on its own, `launch_overhead_us`).
    launches: u64,
    /// Their point updates: their own planes at every step.
    points: f64,
    /// Kernel seconds per point and step, the launch gaps taken out.
    per_point_s: f64,
}

/// The steady cost of a run of `w`'s program over `steps` steps in chunks of `b`
/// planes with `depth` steps per kernel, from its trace (`None`: no steady kernels).
fn steady_cost(
    trace: &str,
    w: &Workload,
    steps: u64,
    b: u64,
    depth: u64,
    launch_s: f64,
) -> Option<SteadyCost> {
    let (first, end) = steady_chunks(w.n, b, crate::model::predict::handover(w, steps));
    let (seconds, chunks) = steady_kernel_seconds(trace, first, end)?;
    let launches = chunks * crate::model::predict::kernel_groups(steps, depth) * w.kernels_per_step;
    let points = (chunks * b * w.plane * steps) as f64;
    let busy = (seconds - launches as f64 * launch_s).max(0.0);
    Some(SteadyCost {
        first,
        end,
        seconds,
        launches,
        points,
        per_point_s: busy / points,
    })
}

/// The source of one probe program for `elem` on `extents`.
fn source(p: &Program, elem: &str, extents: &[u64]) -> String {
    let mut text = p.text.replace("REAL", elem);
    for (name, v) in p.extents.iter().zip(extents) {
        text = text.replace(name, &v.to_string());
    }
    text
}

/// The kernels' busy seconds from the `trace:` line a run prints with `TPACE_TRACE`.
pub fn kernel_seconds(stderr: &str) -> Option<f64> {
    let line = stderr.lines().rev().find(|l| l.contains(": trace: "))?;
    let rest = &line[line.find("kernels ran ")? + "kernels ran ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// Rates (bytes per second) of the copies in a `TPACE_TRACE` file's text that ran
/// alone, while no other copy went either way: `(uploads, downloads)`. These are the copies as a
/// plan makes them (chunks of the user's page-locked arrays, kernels running), which
/// the model's `h2d_gbs` and `d2h_gbs` stand for; the copy test's best of five 1 GiB
/// copies ran 10 % faster on the H100 than the traced plans' uploads (54.9 against
/// 49.9 GB/s, 2026-11-25).
pub fn lone_copy_rates(trace: &str) -> (Vec<f64>, Vec<f64>) {
    // (op, start, end, bytes) of every copy.
    let copies: Vec<(String, f64, f64, f64)> = trace_ops(trace)
        .flatten()
        .filter(|o| o.op == "upload" || o.op == "download")
        .map(|o| (o.op, o.start_ms, o.end_ms, o.bytes))
        .collect();
    let mut up = Vec::new();
    let mut down = Vec::new();
    for (i, (op, start, end, bytes)) in copies.iter().enumerate() {
        let (start, end, bytes) = (*start, *end, *bytes);
        // Two copies the same way share the link as much as two opposite ones (the probe's
        // short 3-D chunks overlap their uploads: 27.5 GB/s each, 2026-11-25 14:30 UTC).
        let met = copies
            .iter()
            .enumerate()
            .any(|(j, (_, s, e, _))| j != i && s.max(start) < e.min(end));
        if met || end <= start || bytes <= 0.0 {
            continue;
        }
        let rate = bytes / ((end - start) * 1e-3);
        if op == "upload" {
            up.push(rate);
        } else {
            down.push(rate);
        }
    }
    (up, down)
}

/// The median of `v` (None when empty).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// What the kernel runs measured: the kernels' figures and the rates of the copies
/// that ran alone in their traces ([`lone_copy_rates`], every run together).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelProbe {
    /// One entry per element type, shape class and depth.
    pub runs: Vec<KernelRun>,
    /// Uploads that met no download: bytes per second of each.
    pub lone_uploads: Vec<f64>,
    /// Downloads that met no upload: bytes per second of each.
    pub lone_downloads: Vec<f64>,
}

/// Translate, build and time every shape class and element type; `emulate`: on
/// the CPU emulation (tiny grids; the figures are the CPU's). `log` gets a line
/// per run.
pub fn probe_kernels(
    tc: &Toolchain,
    flavour: Flavour,
    emulate: bool,
    launch_s: f64,
    units: u64,
    log: &mut dyn FnMut(&str),
) -> Result<KernelProbe, Failure> {
    let dir = tempfile::tempdir()
        .map_err(|e| Failure(format!("error: cannot make a scratch folder: {e}\n")))?;
    // Everything to build: (program, elem, extents, rows, steps, workload, deepest).
    let mut jobs = Vec::new();
    for p in &PROGRAMS {
        for elem in ELEMS {
            let (extents, rows, steps) = grid(p.shape, elem, emulate);
            let text = source(p, elem, &extents);
            let compiled = crate::plan::compile_source(p.file, &text).map_err(|d| {
                Failure(format!(
                    "error: the probe program {} does not compile ({} diagnostics)\n",
                    p.file,
                    d.len()
                ))
            })?;
            let w = Workload::from_unit(compiled.unit(0), &extents, steps)
                .map_err(|e| Failure(format!("error: probe program {}: {e}\n", p.file)))?;
            let deepest = compiled
                .unit(0)
                .plan
                .fusion
                .as_ref()
                .map_or(1, |f| u64::from(f.max_steps));
            let output = crate::driver::translate(&compiled, Target::Cuda)?;
            jobs.push((p, elem, extents, rows, steps, w, deepest, output));
        }
    }
    // Build them all at once (nvcc is slow; the GPU machine has cores).
    let built: Vec<Result<_, Failure>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(i, job)| {
                let dir = dir.path();
                s.spawn(move || build(tc, &job.7, dir, &format!("k{i}"), flavour))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a build thread panicked"))
            .collect()
    });
    let mut runs: Vec<KernelRun> = Vec::new();
    let (mut lone_uploads, mut lone_downloads) = (Vec::new(), Vec::new());
    for (job, built) in jobs.iter().zip(built) {
        let (p, elem, extents, rows, steps, w, deepest, _) = job;
        let binary = built?.binary;
        let job_start = runs.len();
        let grid = extents
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("x");
        // The probe's first run warms the device (clocks, the driver) and is not kept.
        if runs.is_empty() {
            time_one(&binary, dir.path(), *steps, *rows, 1)?;
        }
        for depth in 1..=*deepest {
            let (stderr, ok) = time_one(&binary, dir.path(), *steps, *rows, depth)?;
            if !ok {
                if depth == 1 {
                    return Err(Failure(format!(
                        "error: the probe program {} ({elem}) failed:\n{stderr}",
                        p.file
                    )));
                }
                // A depth the device has no room for: the deeper ones have none either.
                log(&format!(
                    "{} {elem}: {depth} steps per kernel refused, deeper ones not tried: {}",
                    p.shape,
                    stderr.lines().last().unwrap_or("")
                ));
                break;
            }
            let report = parse_report(&stderr);
            let fuse: u64 = report.get("fuse").and_then(|f| f.parse().ok()).unwrap_or(1);
            if fuse != depth {
                log(&format!(
                    "{} {elem}: TPACE_FUSE={depth} ran {fuse} steps per kernel; not kept",
                    p.shape
                ));
                continue;
            }
            let trace = std::fs::read_to_string(dir.path().join("trace.tsv")).unwrap_or_default();
            let (up, down) = lone_copy_rates(&trace);
            lone_uploads.extend(up);
            lone_downloads.extend(down);
            let cost = steady_cost(&trace, w, *steps, *rows, depth, launch_s).ok_or_else(|| {
                let (first, end) = steady_chunks(w.n, *rows, crate::model::predict::handover(w, *steps));
                Failure(format!(
                    "error: the probe program {} wrote no kernels of chunks {first} to {} in its trace:\n{stderr}",
                    p.file,
                    end - 1
                ))
            })?;
            let SteadyCost {
                first,
                end,
                seconds,
                launches,
                points,
                ..
            } = cost;
            let ps = cost.per_point_s * 1e12;
            log(&format!(
                "{} {elem} fuse {depth}: steady chunks {first}..{} kernels {seconds:.6} s ({launches} launches), \
                 {ps:.4} ps per point and step (all chunks: {:.6} s)",
                p.shape,
                end - 1,
                kernel_seconds(&stderr).unwrap_or(0.0)
            ));
            if ps.is_finite() && ps > 0.0 {
                runs.push(KernelRun {
                    elem: elem.to_string(),
                    shape: p.shape.to_string(),
                    fuse: depth,
                    ps,
                    bytes: w.bytes_per_point,
                    rows: *rows,
                    blocks: if depth > 1 {
                        units * w.fuse_blocks_per_sm.get(depth as usize).copied().unwrap_or(0)
                    } else {
                        0
                    },
                    segment_rows: None,
                    launch_rows: None,
                    what: format!(
                        "src/probe/kernels/{} ({elem}, {grid}, {steps} steps, mmtb k={steps} b={rows} 3 streams, \
                         TPACE_FUSE={depth}): kernel busy time of the steady chunks {first} to {} from TPACE_TRACE, \
                         less {launches} launches at {:.2} us, over {:.0} point updates",
                        p.file,
                        end - 1,
                        launch_s * 1e6,
                        points
                    ),
                });
            }
        }
        // What segments and launches cost, for every fused depth the model may pick.
        let fitting = FitRuns {
            binary: &binary,
            dir: dir.path(),
            w,
            steps: *steps,
            rows: *rows,
            launch_s,
        };
        for i in near_fastest(&runs[job_start..]) {
            let i = job_start + i;
            let costs = segment_costs(&fitting, &runs[i], log)?;
            (runs[i].segment_rows, runs[i].launch_rows) = costs;
            if costs.1.is_some() {
                let more = format!(
                    "; segment and launch costs fitted with runs at b={rows} aiming at {} blocks (where that \
                     makes more segments) and at b={}",
                    4 * runs[i].blocks,
                    (*rows / 2).max(1)
                );
                runs[i].what.push_str(&more);
            }
        }
        borrow_launch_costs(&mut runs[job_start..]);
        // One step a kernel: what a launch costs beyond its rows, from half the width.
        if let Some(i) = runs[job_start..].iter().position(|r| r.fuse == 1) {
            let i = job_start + i;
            let launch = one_step_launch_cost(&fitting, &runs[i], log)?;
            if let Some(l) = launch {
                runs[i].launch_rows = Some(l);
                runs[i].what.push_str(&format!(
                    "; launch cost fitted with a run at b={}",
                    (*rows / 2).max(1)
                ));
            }
        }
    }
    Ok(KernelProbe {
        runs,
        lone_uploads,
        lone_downloads,
    })
}

/// How much slower than a program's fastest fused depth a depth may run on the probe's
/// chunks and still have its segment and launch costs fitted: such a depth may win on
/// other chunk widths. On the H100 (2026-11-25) heat-3D's 4 steps a kernel ran 13 %
/// slower than 3 on the probe's 40-plane chunks and 12 % faster on 178-plane chunks of
/// the 87 GB grid; without its own launch cost the model kept it at the probe's figure.
pub const FIT_WITHIN: f64 = 1.25;

/// The fused runs of one program (indices into `runs`) whose segment and launch costs
/// the probe fits: every fused depth within [`FIT_WITHIN`] of the fastest.
pub fn near_fastest(runs: &[KernelRun]) -> Vec<usize> {
    let fused = |r: &&KernelRun| r.fuse > 1 && r.blocks > 0;
    let Some(best) = runs
        .iter()
        .filter(fused)
        .map(|r| r.ps)
        .min_by(f64::total_cmp)
    else {
        return Vec::new();
    };
    runs.iter()
        .enumerate()
        .filter(|(_, r)| fused(r) && r.ps <= FIT_WITHIN * best)
        .map(|(i, _)| i)
        .collect()
}

/// Fused depths of one program whose launch cost was not fitted (slower than
/// [`FIT_WITHIN`] of the fastest, or runs the formula did not fit) take the nearest
/// fitted depth's (the shallower on a tie), said in their `what`: pricing their
/// launches as free made narrow chunks look as cheap as wide ones (four H100s,
/// 2026-11-26: the model took 164-plane chunks at 4 steps a kernel, which ran 1.9 ps
/// a point and step against its 1.1).
pub fn borrow_launch_costs(runs: &mut [KernelRun]) {
    let fitted: Vec<(u64, f64)> = runs
        .iter()
        .filter(|r| r.fuse > 1)
        .filter_map(|r| r.launch_rows.map(|l| (r.fuse, l)))
        .collect();
    for r in runs
        .iter_mut()
        .filter(|r| r.fuse > 1 && r.launch_rows.is_none())
    {
        let Some(&(from, launch)) = fitted.iter().min_by_key(|(f, _)| (f.abs_diff(r.fuse), *f))
        else {
            continue;
        };
        r.launch_rows = Some(launch);
        r.what.push_str(&format!(
            "; launch cost not fitted for this depth: {launch:.1} rows, the fitted cost of {from} steps a kernel"
        ));
    }
}

/// Where and how the probe's extra runs for a program's launch costs are made: its built
/// binary and folder, its workload, steps and chunk width, and the launch overhead the
/// kernel times are taken net of.
#[derive(Clone, Copy)]
struct FitRuns<'a> {
    binary: &'a Path,
    dir: &'a Path,
    w: &'a Workload,
    steps: u64,
    rows: u64,
    launch_s: f64,
}

/// What a launch of `base`'s one-step kernel costs beyond its rows, in rows: `base` and
/// a run at half its width ([`super::segments::fit`], one segment a launch, none of
/// it computed in vain). `None` where the run fails or the fit finds no such cost (logged).
fn one_step_launch_cost(
    at: &FitRuns<'_>,
    base: &KernelRun,
    log: &mut dyn FnMut(&str),
) -> Result<Option<f64>, Failure> {
    use super::segments::{SegmentRun, fit};
    let rows = at.rows;
    let half = (rows / 2).max(1);
    let (stderr, ok) = time_aiming(at.binary, at.dir, at.steps, half, 1, None)?;
    let trace = std::fs::read_to_string(at.dir.join("trace.tsv")).unwrap_or_default();
    let Some(cost) = steady_cost(&trace, at.w, at.steps, half, 1, at.launch_s).filter(|_| ok)
    else {
        log(&format!(
            "{} {} fuse 1 b={half}: no steady kernels ({}); launch cost not fitted",
            base.shape,
            base.elem,
            stderr.lines().last().unwrap_or("")
        ));
        return Ok(None);
    };
    let wide = SegmentRun {
        seconds: base.ps * 1e-12,
        seg: rows,
        rows,
    };
    let narrow = SegmentRun {
        seconds: cost.per_point_s,
        seg: half,
        rows: half,
    };
    let launch = fit(&[wide, wide, narrow], 0.0).map(|(_, l)| l);
    log(&format!(
        "{} {} fuse 1: {:.4} / {:.4} ps per point and step (chunks of {rows} / {half}): {}",
        base.shape,
        base.elem,
        wide.seconds * 1e12,
        narrow.seconds * 1e12,
        launch.map_or("no launch cost fits (not written)".into(), |l| format!(
            "{l:.1} rows a launch"
        ))
    ));
    Ok(launch)
}

/// What a segment and a launch of `base`'s kernel cost, in rows ([`super::segments::fit`]):
/// `base` and two runs more, its width aiming at four waves, and half its width.
/// `(None, None)` where a run fails or the fit finds no such cost (logged).
fn segment_costs(
    at: &FitRuns<'_>,
    base: &KernelRun,
    log: &mut dyn FnMut(&str),
) -> Result<(Option<f64>, Option<f64>), Failure> {
    use super::segments::{SegmentRun, fit};
    use crate::model::predict::{rows_in_vain, segment_of};
    let FitRuns {
        binary,
        dir,
        w,
        steps,
        rows,
        launch_s,
    } = *at;
    let depth = base.fuse;
    let seg = |b: u64, blocks: u64| segment_of(w, b, depth, blocks);
    let mut fitted = vec![SegmentRun {
        seconds: base.ps * 1e-12,
        seg: seg(rows, base.blocks),
        rows,
    }];
    for (b, blocks) in [(rows, 4 * base.blocks), ((rows / 2).max(1), base.blocks)] {
        if b == rows && seg(b, blocks) == fitted[0].seg {
            // More blocks make no more segments (3-D tiles fill the waves alone): the
            // run would repeat the probe's own, and the fit then uses the two widths.
            fitted.push(fitted[0]);
            continue;
        }
        let (stderr, ok) = time_aiming(binary, dir, steps, b, depth, Some(blocks))?;
        let trace = std::fs::read_to_string(dir.join("trace.tsv")).unwrap_or_default();
        let Some(cost) = steady_cost(&trace, w, steps, b, depth, launch_s).filter(|_| ok) else {
            log(&format!(
                "{} fuse {depth} b={b} aiming at {blocks} blocks: no steady kernels ({}); segment costs not fitted",
                base.shape,
                stderr.lines().last().unwrap_or("")
            ));
            return Ok((None, None));
        };
        fitted.push(SegmentRun {
            seconds: cost.per_point_s,
            seg: seg(b, blocks),
            rows: b,
        });
    }
    let runs: [SegmentRun; 3] = fitted.try_into().expect("three runs");
    let costs = fit(&runs, rows_in_vain(w, depth));
    log(&format!(
        "{} {} fuse {depth}: {:.4} / {:.4} / {:.4} ps per point and step (segments of {} / {} / {} rows, chunks of {} / {} / {}): {}",
        base.shape,
        base.elem,
        runs[0].seconds * 1e12,
        runs[1].seconds * 1e12,
        runs[2].seconds * 1e12,
        runs[0].seg,
        runs[1].seg,
        runs[2].seg,
        runs[0].rows,
        runs[1].rows,
        runs[2].rows,
        match costs {
            Some((Some(s), l)) => format!("{s:.1} rows a segment, {l:.1} a launch"),
            Some((None, l)) => format!("{l:.1} rows a launch (one segment a launch)"),
            None => "no segment or launch cost fits (not written)".into(),
        }
    ));
    Ok(costs.map_or((None, None), |(s, l)| (s, Some(l))))
}

/// One timed run with `depth` steps per kernel: its standard error and whether it succeeded.
fn time_one(
    binary: &Path,
    dir: &Path,
    steps: u64,
    rows: u64,
    depth: u64,
) -> Result<(String, bool), Failure> {
    time_aiming(binary, dir, steps, rows, depth, None)
}

/// [`time_one`], its fused launches aiming at `blocks` blocks where given (`TPACE_FUSE_BLOCKS`).
fn time_aiming(
    binary: &Path,
    dir: &Path,
    steps: u64,
    rows: u64,
    depth: u64,
    blocks: Option<u64>,
) -> Result<(String, bool), Failure> {
    let trace = dir.join("trace.tsv");
    let mut command = Command::new(binary);
    if let Some(b) = blocks {
        command.env("TPACE_FUSE_BLOCKS", b.to_string());
    } else {
        command.env_remove("TPACE_FUSE_BLOCKS");
    }
    let out = command
        .arg(steps.to_string())
        .env("TPACE_SCHEDULE", "mmtb")
        .env("TPACE_K", steps.to_string())
        .env("TPACE_CHUNK", rows.to_string())
        .env("TPACE_STREAMS", "3")
        .env("TPACE_FUSE", depth.to_string())
        .env("TPACE_TRACE", &trace)
        // Every kernel loaded when the program starts, not at its first launch (timed).
        .env("CUDA_MODULE_LOADING", "EAGER")
        .env_remove("TPACE_DEVICE_MEM")
        .output()
        .map_err(|e| Failure(format!("error: cannot run {}: {e}\n", binary.display())))?;
    Ok((
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_line_gives_the_kernel_seconds() {
        let line = "tpace: x.c:3:1: trace: 12 operations written to t.tsv; in 0.500000 s, kernels ran \
                    0.461000 s and none ran 0.039000 s (0.01 s before the first, ...)";
        assert_eq!(kernel_seconds(&format!("noise\n{line}\n")), Some(0.461));
        assert_eq!(kernel_seconds("no trace here"), None);
    }

    /// The steady chunks and the lone copies of the traces of 2026-11-25 (the model's
    /// plans for Jacobi-2D and heat-3D on the H100, tests/fixtures/traces).
    #[test]
    fn the_traces_give_the_steady_kernels_and_the_lone_copies() {
        let jacobi = include_str!("../../tests/fixtures/traces/1-jacobi2d-49152x61440-model.tsv");
        let heat = include_str!("../../tests/fixtures/traces/9-heat3d-1152x1536x1728-model.tsv");
        // Jacobi-2D: 25 chunks of 1967 planes, a hand-over of 128 planes: chunks 1 to 23.
        assert_eq!(steady_chunks(49152, 1967, 128), (1, 24));
        let (s, n) = steady_kernel_seconds(jacobi, 1, 24).unwrap();
        assert_eq!(n, 23);
        assert!((s / n as f64 - 0.0152095).abs() < 1e-6, "{}", s / n as f64);
        // Heat-3D: 31 chunks of 38 planes, a hand-over of 64: chunks 2 to 29, of two blocks.
        assert_eq!(steady_chunks(1152, 38, 64), (2, 30));
        let (s, n) = steady_kernel_seconds(heat, 2, 30).unwrap();
        assert_eq!(n, 56);
        assert!((s / n as f64 - 0.0179275).abs() < 1e-6, "{}", s / n as f64);
        // A chunk's upload alone ran at about 50 GB/s, its download at about 53.
        let (mut up, mut down) = lone_copy_rates(jacobi);
        let (u2, d2) = lone_copy_rates(heat);
        up.extend(u2);
        down.extend(d2);
        assert_eq!((up.len(), down.len()), (72, 72));
        let (u, d) = (median(&up).unwrap() / 1e9, median(&down).unwrap() / 1e9);
        assert!(
            (u - 49.85).abs() < 0.01 && (d - 52.68).abs() < 0.01,
            "{u} {d}"
        );
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    /// The depths whose launch costs are fitted: every fused one within 25 % of the
    /// fastest (the probe's heat-3D figures of 2026-11-25 14:30 UTC), not one step a
    /// kernel, not a depth far slower.
    #[test]
    fn launch_costs_are_fitted_for_every_depth_near_the_fastest() {
        let run = |fuse: u64, ps: f64| KernelRun {
            elem: "float".into(),
            shape: "3d-r1".into(),
            fuse,
            ps,
            bytes: 8.0,
            rows: 40,
            blocks: if fuse > 1 { 264 } else { 0 },
            segment_rows: None,
            launch_rows: None,
            what: String::new(),
        };
        let runs = [
            run(1, 4.7743),
            run(2, 2.6329),
            run(3, 2.6374),
            run(4, 2.9776),
            run(5, 3.4),
        ];
        assert_eq!(near_fastest(&runs), vec![1, 2, 3]);
        assert_eq!(near_fastest(&runs[..1]), Vec::<usize>::new());
    }

    /// Depths without a fitted launch cost take the nearest fitted depth's (the
    /// shallower on a tie); one step a kernel and fitted depths keep theirs.
    #[test]
    fn unfitted_depths_borrow_the_nearest_launch_cost() {
        let run = |fuse: u64, launch: Option<f64>| KernelRun {
            elem: "float".into(),
            shape: "2d-r1".into(),
            fuse,
            ps: 1.0,
            bytes: 8.0,
            rows: 2048,
            blocks: if fuse > 1 { 528 } else { 0 },
            segment_rows: None,
            launch_rows: launch,
            what: String::new(),
        };
        let mut runs = vec![
            run(1, None),
            run(2, None),
            run(4, None),
            run(5, Some(60.0)),
            run(7, None),
            run(9, Some(90.0)),
        ];
        borrow_launch_costs(&mut runs);
        let launches: Vec<Option<f64>> = runs.iter().map(|r| r.launch_rows).collect();
        assert_eq!(
            launches,
            [
                None,
                Some(60.0),
                Some(60.0),
                Some(60.0),
                Some(60.0),
                Some(90.0)
            ]
        );
        assert!(
            runs[1].what.contains("fitted cost of 5 steps"),
            "{}",
            runs[1].what
        );
        assert!(runs[3].what.is_empty());
        // Nothing fitted: nothing to borrow.
        let mut none = vec![run(2, None), run(3, None)];
        borrow_launch_costs(&mut none);
        assert!(none.iter().all(|r| r.launch_rows.is_none()));
    }

    /// Two uploads at once share the link: neither is a lone copy's rate, nor are
    /// an upload and a download that meet; the copy that ran alone is.
    #[test]
    fn copies_that_meet_any_other_copy_are_not_alone() {
        let trace = "chunk\tfirst_step\tsteps\tqueue\top\tstart_ms\tend_ms\tbytes\n\
                     0\t0\t8\t0\tupload\t0.0\t20.0\t500000000\n\
                     1\t0\t8\t1\tupload\t10.0\t30.0\t500000000\n\
                     2\t0\t8\t2\tupload\t40.0\t50.0\t500000000\n\
                     0\t0\t8\t0\tdownload\t45.0\t55.0\t500000000\n\
                     1\t0\t8\t1\tdownload\t60.0\t70.0\t500000000\n";
        let (up, down) = lone_copy_rates(trace);
        assert!(up.is_empty(), "{up:?}");
        assert_eq!(down, vec![50e9]);
    }

    /// Every probe program compiles for both types, with the class it stands for.
    #[test]
    fn the_programs_are_of_their_class() {
        for p in &PROGRAMS {
            for elem in ELEMS {
                let (extents, _, steps) = grid(p.shape, elem, true);
                let text = source(p, elem, &extents);
                let c = crate::plan::compile_source(p.file, &text).expect("compiles");
                let w = Workload::from_unit(c.unit(0), &extents, steps).unwrap();
                assert_eq!((w.elem.as_str(), w.shape.as_str()), (elem, p.shape));
                assert!(c.unit(0).plan.fusion.is_some(), "{} fuses", p.file);
            }
        }
    }
}
