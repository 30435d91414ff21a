//! `tpace probe`'s kernel part: the time the kernels tpace emits take per grid point
//! and step, for every element type, stencil shape class and number of steps per
//! kernel the translation offers (the profile's `[[kernels]]`, which the model
//! prices kernels by).
//!
//! Rather than hand-written kernels, which would drift from what tpace emits, the
//! probe translates small bundled stencil programs (`kernels/*.c`) with tpace itself
//! to CUDA, builds them, and runs each out-of-core the way plans run (mmtb, one block,
//! a few chunks, three streams) with `TPACE_FUSE` forcing the steps per kernel and
//! `TPACE_TRACE` recording the timeline: the kernels' busy time over the grid's point
//! updates is the figure. The copies run meanwhile, as they do in a plan. Every depth
//! the translation has kernels for is timed (2-D rows fuse deeper than 3-D tiles); a
//! depth the device refuses ends the list for that program.

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
    /// What ran: program, grid, plan.
    pub what: String,
}

/// A probe program's grid: extents (outermost first), chunk width, steps. On a GPU
/// about 1 GB an array, with planes as wide as the benchmarks' (61440 columns in
/// 2-D, 1536 x 1728 in 3-D) and 3 to 4 chunks; tiny on the emulation.
fn grid(shape: &str, elem: &str, emulate: bool) -> (Vec<u64>, u64, u64) {
    let double = elem == "double";
    match (shape.starts_with("3d"), emulate) {
        (false, true) => (vec![48, 40], 16, 8),
        (true, true) => (vec![16, 12, 10], 6, 4),
        (false, false) if double => (vec![2048, 61440], 512, 128),
        (false, false) => (vec![4096, 61440], 1024, 128),
        (true, false) if double => (vec![48, 1536, 1728], 16, 64),
        (true, false) => (vec![96, 1536, 1728], 32, 64),
    }
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

/// Translate, build and time every shape class and element type; `emulate`: on
/// the CPU emulation (tiny grids; the figures are the CPU's). `log` gets a line
/// per run.
pub fn probe_kernels(
    tc: &Toolchain,
    flavour: Flavour,
    emulate: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<KernelRun>, Failure> {
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
    let mut runs = Vec::new();
    for (job, built) in jobs.iter().zip(built) {
        let (p, elem, extents, rows, steps, w, deepest, _) = job;
        let binary = built?.binary;
        let points = w.points() as f64 * *steps as f64;
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
            let seconds = kernel_seconds(&stderr).ok_or_else(|| {
                Failure(format!(
                    "error: the probe program {} printed no trace line:\n{stderr}",
                    p.file
                ))
            })?;
            let ps = seconds / points * 1e12;
            log(&format!(
                "{} {elem} fuse {depth}: kernels {seconds:.6} s, {ps:.4} ps per point and step",
                p.shape
            ));
            if ps.is_finite() && ps > 0.0 {
                runs.push(KernelRun {
                    elem: elem.to_string(),
                    shape: p.shape.to_string(),
                    fuse: depth,
                    ps,
                    bytes: w.bytes_per_point,
                    rows: *rows,
                    what: format!(
                        "src/probe/kernels/{} ({elem}, {grid}, {steps} steps, mmtb k={steps} b={rows} 3 streams, \
                         TPACE_FUSE={depth}): kernel busy time from TPACE_TRACE over {points:.0} point updates",
                        p.file
                    ),
                });
            }
        }
    }
    Ok(runs)
}

/// One timed run with `depth` steps per kernel: its standard error and whether it succeeded.
fn time_one(
    binary: &Path,
    dir: &Path,
    steps: u64,
    rows: u64,
    depth: u64,
) -> Result<(String, bool), Failure> {
    let trace = dir.join("trace.tsv");
    let out = Command::new(binary)
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
