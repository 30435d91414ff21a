//! `tpace tune --target opencl`: the stencil-directives paper's exhaustive
//! search (§4.3): build once, run the program over every power-of-two
//! work-group shape (no side longer than the grid, no more work items than a
//! group may hold) and every temporal block size T its kernels can take,
//! optionally crossed with schedules and k, b, streams; write `results.csv` and
//! a heat map of work-group shape by T (`heatmap.svg`), and compare the best
//! measured configuration with the evolution-vector model's pick: the ratio
//! of its rate to the best rate (the paper: 0.888 on its GPU, 0.922 on the Xeon
//! Phi) and the time each took to choose (the paper: 5.2 s against 7 s to 7.9 h).
//!
//! Runs are timed by their kernels (the program's `TPACE_TRACE` summary: the
//! paper timed kernels with OpenCL's profiling too); the whole time loop's
//! seconds are in the CSV beside them.

use super::heatmap::HeatMap;
use super::run::{Flavour, Toolchain, build, opencl_device, parse_report};
use super::tune::{Point, TuneRequest, default_bs, default_ks, large_static_flags, sweep_points};
use super::{Compiled, Failure, today, translate_for, write_atomically};
use crate::model::expr::Macros;
use crate::model::opencl::{choose, max_steps, wg_text};
use crate::model::{Profile, workload};
use crate::plan::Schedule;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// One configuration: a work group (x first), T, and the out-of-core point
/// (None: the program's own plan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClPoint {
    /// Work-group shape, x (innermost) first.
    pub wg: [u64; 3],
    /// Steps per tiled kernel.
    pub t: u64,
    /// Schedule, k, b, streams (None: whatever the program chooses).
    pub plan: Option<Point>,
}

impl ClPoint {
    /// `32x8x1 T=2 incore`.
    pub fn label(&self) -> String {
        let plan = self.plan.map_or("default plan".to_string(), |p| p.label());
        format!("{} T={} {plan}", wg_text(self.wg), self.t)
    }
}

/// One run's outcome.
#[derive(Debug, Clone)]
pub struct ClMeasured {
    /// What was asked.
    pub point: ClPoint,
    /// `None` when it ran, else why not (refused: exit code 2).
    pub error: Option<(bool, String)>,
    /// The report line's key=value pairs.
    pub report: BTreeMap<String, String>,
    /// Seconds of the time loop.
    pub seconds: Option<f64>,
    /// Seconds the kernels kept the device busy (TPACE_TRACE).
    pub kernel_seconds: Option<f64>,
    /// The OpenCL device it ran on.
    pub device: Option<String>,
    /// The work group and T the program says it used (`work group AxBxC, T=t`).
    pub stderr_choice: Option<String>,
}

impl ClMeasured {
    /// The time the sweep ranks by: the kernels' where known, else the loop's.
    pub fn time(&self) -> Option<f64> {
        self.kernel_seconds.or(self.seconds).filter(|s| *s > 0.0)
    }
}

/// Every power-of-two work-group shape for a grid of `extents` (x first): no
/// side longer than the grid's, at most `max_items` work items.
pub fn wg_shapes(extents_x_first: &[u64], max_items: u64) -> Vec<[u64; 3]> {
    let side = |d: usize| -> Vec<u64> {
        let e = extents_x_first.get(d).copied().unwrap_or(1).max(1);
        (0..=20).map(|p| 1u64 << p).filter(|s| *s <= e).collect()
    };
    let mut out = Vec::new();
    for x in side(0) {
        for y in side(1) {
            for z in side(2) {
                if x * y * z <= max_items {
                    out.push([x, y, z]);
                }
            }
        }
    }
    out
}

/// Parse `--wg` values: `64x4`, `64,4,1` (x first, 1 to 3 sizes).
pub fn parse_wg(text: &str) -> Result<[u64; 3], String> {
    let parts: Vec<&str> = text.split(['x', 'X', ',']).collect();
    let mut wg = [1u64; 3];
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{text}` is not a work-group shape (e.g. 64x4x1)"));
    }
    for (d, p) in parts.iter().enumerate() {
        wg[d] = p
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|v| (1..=65536).contains(v))
            .ok_or_else(|| {
                format!("`{text}` is not a work-group shape (sizes 1 to 65536, e.g. 64x4x1)")
            })?;
    }
    Ok(wg)
}

/// The kernel seconds of a TPACE_TRACE summary line (`kernels ran X s`).
fn kernel_seconds(stderr: &str) -> Option<f64> {
    let line = stderr.lines().find(|l| l.contains(": trace: "))?;
    let at = line.find("kernels ran ")? + "kernels ran ".len();
    line[at..].split_whitespace().next()?.parse().ok()
}

/// Run the built program once; with `own`, without TPACE_WG and TPACE_T (the
/// program's own choice).
fn run(
    binary: &Path,
    args: &[String],
    p: &ClPoint,
    mem_cap: Option<u128>,
    trace: &Path,
    own: bool,
) -> ClMeasured {
    let mut cmd = Command::new(binary);
    cmd.args(args);
    for v in [
        "TPACE_SCHEDULE",
        "TPACE_K",
        "TPACE_CHUNK",
        "TPACE_STREAMS",
        "TPACE_DUMP",
        "TPACE_WG",
        "TPACE_T",
    ] {
        cmd.env_remove(v);
    }
    if !own {
        cmd.env("TPACE_WG", wg_text(p.wg));
        cmd.env("TPACE_T", p.t.to_string());
    }
    cmd.env("TPACE_TRACE", trace);
    if let Some(plan) = &p.plan {
        cmd.env("TPACE_SCHEDULE", plan.schedule.name());
        for (name, v) in [
            ("TPACE_K", plan.k),
            ("TPACE_CHUNK", plan.b),
            ("TPACE_STREAMS", plan.streams),
        ] {
            if let Some(v) = v {
                cmd.env(name, v.to_string());
            }
        }
    }
    if let Some(cap) = mem_cap {
        cmd.env("TPACE_DEVICE_MEM", cap.to_string());
    }
    let mut m = ClMeasured {
        point: p.clone(),
        error: None,
        report: BTreeMap::new(),
        seconds: None,
        kernel_seconds: None,
        device: None,
        stderr_choice: None,
    };
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            m.error = Some((false, format!("cannot run {}: {e}", binary.display())));
            return m;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    m.device = opencl_device(&stderr);
    m.stderr_choice = stderr
        .lines()
        .find_map(|l| l.split_once(" work group ").map(|(_, r)| r))
        .and_then(|r| r.split_once(" (").map(|(c, _)| format!("work group {c}")));
    if !out.status.success() {
        let line = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(no message)")
            .to_string();
        m.error = Some((out.status.code() == Some(2), line));
        return m;
    }
    m.report = parse_report(&stderr);
    m.seconds = m.report.get("seconds").and_then(|s| s.parse().ok());
    m.kernel_seconds = kernel_seconds(&stderr);
    if m.seconds.is_none() {
        m.error = Some((false, "no `tpace:` report line with seconds=".into()));
    }
    m
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `results.csv`: one row per run.
pub fn csv(results: &[ClMeasured]) -> String {
    let mut out =
        String::from("wg,t,schedule,k,b,streams,chunks,fuse,seconds,kernel_seconds,glups,status\n");
    for m in results {
        let get = |k: &str| m.report.get(k).cloned().unwrap_or_default();
        let asked = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let plan = m.point.plan;
        let status = match &m.error {
            None => "ok".to_string(),
            Some((true, msg)) => format!("refused: {msg}"),
            Some((false, msg)) => format!("failed: {msg}"),
        };
        let row = [
            wg_text(m.point.wg),
            m.point.t.to_string(),
            if m.error.is_none() {
                get("schedule")
            } else {
                plan.map_or(String::new(), |p| p.schedule.name().to_string())
            },
            if m.error.is_none() {
                get("k")
            } else {
                asked(plan.and_then(|p| p.k))
            },
            if m.error.is_none() {
                get("b")
            } else {
                asked(plan.and_then(|p| p.b))
            },
            if m.error.is_none() {
                get("streams")
            } else {
                asked(plan.and_then(|p| p.streams))
            },
            get("chunks"),
            get("fuse"),
            get("seconds"),
            m.kernel_seconds
                .map_or(String::new(), |s| format!("{s:.6}")),
            get("glups"),
            status,
        ];
        let row: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        let _ = writeln!(out, "{}", row.join(","));
    }
    out
}

/// `heatmap.svg`: work-group shapes (rows) by T (columns), each cell the
/// point rate of its fastest run (updates per second of kernel time), darker
/// faster; the model's pick outlined.
pub fn heatmap(results: &[ClMeasured], points: f64, pick: ([u64; 3], u64), title: &str) -> String {
    let mut wgs: Vec<[u64; 3]> = results.iter().map(|m| m.point.wg).collect();
    wgs.sort_by_key(|w| (w[0] * w[1] * w[2], w[2], w[1], w[0]));
    wgs.dedup();
    let mut ts: Vec<u64> = results.iter().map(|m| m.point.t).collect();
    ts.sort_unstable();
    ts.dedup();
    let at = |(wg, t): ([u64; 3], u64)| {
        let i = wgs
            .iter()
            .position(|w| *w == wg)
            .expect("a listed work group");
        (i, ts.binary_search(&t).expect("a listed T"))
    };
    let mut cells: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut refused = BTreeSet::new();
    for m in results {
        let key = at((m.point.wg, m.point.t));
        match m.time() {
            Some(t) if m.error.is_none() => {
                let rate = points / t * 1e-9;
                let e = cells.entry(key).or_insert(rate);
                *e = e.max(rate);
            }
            _ => {
                refused.insert(key);
            }
        }
    }
    let outlined = (wgs.contains(&pick.0) && ts.contains(&pick.1)).then(|| at(pick));
    HeatMap {
        title,
        subtitle: "Glup/s of kernel time, best over plans (darker is faster; the model's pick outlined)",
        rows: wgs.iter().map(|w| wg_text(*w)).collect(),
        columns: ts.iter().map(|t| format!("T = {t}")).collect(),
        cells,
        refused,
        outlined,
        cell_name: &|i, j| format!("{} T={}", wg_text(wgs[i]), ts[j]),
        column_axis: "on-chip temporal block T (steps per kernel)",
        row_axis: None,
        cell: (84.0, 22.0),
        left: 110.0,
        bottom: 60.0,
    }
    .svg()
}

/// What `tune --target opencl` did.
#[derive(Debug, Clone)]
pub struct ClTuneOutcome {
    /// The report for standard output.
    pub summary: String,
    /// Every run.
    pub results: Vec<ClMeasured>,
    /// Where the CSV and the SVG went.
    pub out: PathBuf,
}

/// Build once, sweep work groups × T (× the out-of-core points asked for),
/// write the CSV and the heat map, compare with the model.
pub fn tune(
    compiled: &Compiled,
    tc: &Toolchain,
    req: &TuneRequest,
) -> Result<ClTuneOutcome, Failure> {
    let fail = |e: String| Failure(format!("error: {e}\n"));
    let program = &compiled.program;
    if program.pipelines.len() > 1 {
        return Err(fail(format!(
            "{} has {} pipelined time loops; `tpace tune` sweeps a program with one\n  help: tune each loop in a file of its own",
            program.path,
            program.pipelines.len()
        )));
    }
    let unit = compiled.unit(0);
    let macros = Macros::new(&req.set, &program.source).map_err(fail)?;
    let extents = workload::extents(unit, &macros)
        .map_err(|e| fail(format!("{e}\n  help: give its value with --set NAME=VALUE")))?;
    let profile = Profile::load(&req.machine).map_err(fail)?;
    let mem_cap = req
        .mem_cap
        .as_deref()
        .map(|m| crate::model::report::parse_bytes(m).map_err(|e| fail(format!("--mem-cap {e}"))))
        .transpose()?;
    // The model's pick, timed: the whole of what the static method costs.
    let started = Instant::now();
    let choice = choose(unit, &profile, &extents).map_err(fail)?;
    let choose_seconds = started.elapsed().as_secs_f64();
    let pick = (choice.params().group, choice.params().t);
    let max_t = max_steps(unit, &profile);
    let ts: Vec<u64> = if req.t.is_empty() {
        (1..=max_t).collect()
    } else {
        req.t.clone()
    };
    if let Some(bad) = ts
        .iter()
        .find(|t| **t == 0 || **t > u64::from(crate::plan::CHOSEN_MAX_STEPS))
    {
        return Err(fail(format!(
            "--t {bad}: T is from 1 to {}",
            crate::plan::CHOSEN_MAX_STEPS
        )));
    }
    let x_first: Vec<u64> = extents.iter().rev().copied().collect();
    let max_items = choice.machine.max_group_size.unwrap_or(1024);
    let wgs: Vec<[u64; 3]> = if req.wg.is_empty() {
        wg_shapes(&x_first, max_items)
    } else {
        req.wg
            .iter()
            .map(|w| parse_wg(w).map_err(|e| fail(format!("--wg {e}"))))
            .collect::<Result<_, _>>()?
    };
    let stem = Path::new(&program.path)
        .file_stem()
        .map_or("program".to_string(), |s| s.to_string_lossy().into_owned());
    let out_dir = req
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tune-{stem}")));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", out_dir.display())))?;
    let mut tc = tc.clone();
    tc.defines
        .extend(req.set.iter().map(|s| s.trim().to_string()));
    tc.extra_flags
        .extend(large_static_flags(compiled, &extents, Flavour::Opencl));
    tc.extra_flags.extend(
        req.cflags
            .iter()
            .flat_map(|f| f.split_whitespace().map(String::from)),
    );
    let scratch =
        tempfile::tempdir().map_err(|e| fail(format!("cannot make a scratch folder: {e}")))?;
    eprintln!("tune: building {} for OpenCL ({})", program.path, tc.cc);
    let built = build(
        &tc,
        &translate_for(compiled, req.target, &profile, false)?,
        scratch.path(),
        "translated",
        Flavour::Opencl,
    )?;
    // Out-of-core points: only those asked for (the paper's search is in-core).
    let asked_plans = !(req.schedules.is_empty()
        && req.k.is_empty()
        && req.chunk.is_empty()
        && req.streams.is_empty());
    let plans: Vec<Option<Point>> = if asked_plans {
        let schedules = if req.schedules.is_empty() {
            vec![Schedule::Incore]
        } else {
            req.schedules.clone()
        };
        let steps = req.steps.or_else(|| workload::steps(unit, &macros).ok());
        let ks = if req.k.is_empty() {
            default_ks(steps.unwrap_or(1))
        } else {
            req.k.clone()
        };
        let bs = if req.chunk.is_empty() {
            default_bs(extents[0])
        } else {
            req.chunk.clone()
        };
        let ss = if req.streams.is_empty() {
            vec![1, 2, 3]
        } else {
            req.streams.clone()
        };
        sweep_points(&schedules, &ks, &bs, &ss)
            .into_iter()
            .map(Some)
            .collect()
    } else {
        vec![Some(Point {
            schedule: Schedule::Incore,
            k: None,
            b: None,
            streams: None,
        })]
    };
    let mut points = Vec::new();
    for plan in &plans {
        for wg in &wgs {
            for t in &ts {
                points.push(ClPoint {
                    wg: *wg,
                    t: *t,
                    plan: *plan,
                });
            }
        }
    }
    let trace = scratch.path().join("trace.tsv");
    let bar = indicatif::ProgressBar::new(points.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("tune {bar:40} {pos}/{len} runs, eta {eta} {msg}")
            .expect("a valid progress template"),
    );
    let sweep_started = Instant::now();
    let mut results = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        bar.set_message(p.label());
        let m = run(&built.binary, &req.args, p, mem_cap, &trace, false);
        let line = format!(
            "[{}/{}] {}: {}",
            i + 1,
            points.len(),
            p.label(),
            match (&m.error, m.time()) {
                (None, Some(t)) => format!("{t:.6} s of kernels"),
                (Some((true, e)), _) => format!("refused ({e})"),
                (Some((false, e)), _) => format!("FAILED ({e})"),
                (None, None) => "no time".into(),
            }
        );
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
        bar.inc(1);
        results.push(m);
    }
    bar.finish_and_clear();
    let sweep_seconds = sweep_started.elapsed().as_secs_f64();
    let ran: Vec<&ClMeasured> = results
        .iter()
        .filter(|m| m.error.is_none() && m.time().is_some())
        .collect();
    let device = ran
        .iter()
        .find_map(|m| m.device.clone())
        .unwrap_or_else(|| "an OpenCL device".into());
    let title = format!(
        "{}: OpenCL on {}, profile {}, {}",
        program.path,
        device.trim_start_matches("OpenCL device "),
        profile.name,
        today()
    );
    let csv_path = out_dir.join("results.csv");
    write_atomically(&csv_path, &csv(&results))?;
    let points_per_run: f64 = extents.iter().map(|e| *e as f64).product::<f64>()
        * ran
            .first()
            .and_then(|m| m.report.get("steps"))
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(1.0);
    let svg_path = out_dir.join("heatmap.svg");
    write_atomically(&svg_path, &heatmap(&results, points_per_run, pick, &title))?;
    let best = ran.iter().copied().min_by(|a, b| {
        a.time()
            .unwrap_or(f64::MAX)
            .total_cmp(&b.time().unwrap_or(f64::MAX))
    });
    let refused = results
        .iter()
        .filter(|m| matches!(m.error, Some((true, _))))
        .count();
    let failed: Vec<&ClMeasured> = results
        .iter()
        .filter(|m| matches!(m.error, Some((false, _))))
        .collect();
    let Some(best) = best else {
        return Err(fail(format!(
            "none of the {} configuration(s) ran ({refused} refused, {} failed; see {})",
            results.len(),
            failed.len(),
            csv_path.display()
        )));
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: tuned on {device}; {} configuration(s): {} ran, {refused} refused, {} failed, in {sweep_seconds:.1} s",
        program.path,
        results.len(),
        ran.len(),
        failed.len()
    );
    let _ = writeln!(
        s,
        "  wrote {} and {}",
        csv_path.display(),
        svg_path.display()
    );
    let _ = writeln!(
        s,
        "best measured: {}: {:.6} s of kernels",
        best.point.label(),
        best.time().unwrap_or(0.0)
    );
    let _ = writeln!(
        s,
        "model's pick ({}, evolution-vector model, chosen in {:.3} ms): work group {} T={}",
        profile.name,
        choose_seconds * 1e3,
        wg_text(pick.0),
        pick.1
    );
    // The pick under the best run's plan: from the sweep, or one more run.
    let pick_point = ClPoint {
        wg: pick.0,
        t: pick.1,
        plan: best.point.plan,
    };
    let found = ran
        .iter()
        .find(|m| m.point == pick_point)
        .map(|m| (*m).clone());
    let (measured, how) = match found {
        Some(m) => (m, "in the sweep".to_string()),
        None => {
            let m = run(
                &built.binary,
                &req.args,
                &pick_point,
                mem_cap,
                &trace,
                false,
            );
            if m.error.is_none() {
                (m, "run once more".to_string())
            } else {
                // The device refuses the model's shape for this kernel (too many work
                // items for its registers, say): the program's own choice, which starts
                // from the model's and shrinks it to fit, is what a user gets.
                let own = run(&built.binary, &req.args, &pick_point, mem_cap, &trace, true);
                let note = own
                    .stderr_choice
                    .clone()
                    .unwrap_or_else(|| "its own choice".into());
                (
                    own,
                    format!("the device refused it; the program's own choice, {note}, run instead"),
                )
            }
        }
    };
    match (&measured.error, measured.time()) {
        (None, Some(t)) => {
            let ratio = best.time().unwrap_or(0.0) / t;
            let _ = writeln!(s, "  measured ({how}): {t:.6} s of kernels");
            let _ = writeln!(
                s,
                "ratio model pick / best measured: {ratio:.3} (rate of the model's pick over the best rate; the paper: 0.888 GPU, 0.922 Xeon Phi)"
            );
        }
        (e, _) => {
            let _ = writeln!(
                s,
                "  measured ({how}): {}\nratio model pick / best measured: none (the pick did not run)",
                e.as_ref().map_or("no time".to_string(), |(_, m)| m.clone())
            );
        }
    }
    let _ = writeln!(
        s,
        "time to choose: the model {:.3} ms, the exhaustive sweep {sweep_seconds:.1} s ({} runs)",
        choose_seconds * 1e3,
        results.len()
    );
    if !failed.is_empty() {
        let _ = writeln!(s, "warning: {} configuration(s) failed:", failed.len());
        for f in &failed {
            let _ = writeln!(
                s,
                "  {}: {}",
                f.point.label(),
                f.error.as_ref().map_or("", |(_, m)| m.as_str())
            );
        }
    }
    Ok(ClTuneOutcome {
        summary: s,
        results,
        out: out_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_parsing() {
        let s = wg_shapes(&[8, 4], 16);
        assert!(s.contains(&[8, 2, 1]) && s.contains(&[4, 4, 1]));
        assert!(!s.contains(&[8, 4, 1]), "more than 16 items");
        assert!(s.iter().all(|w| w[2] == 1 && w[0] <= 8 && w[1] <= 4));
        assert_eq!(parse_wg("64x4").unwrap(), [64, 4, 1]);
        assert_eq!(parse_wg("64,4,2").unwrap(), [64, 4, 2]);
        assert!(parse_wg("64x0").is_err());
        assert!(parse_wg("1x2x3x4").is_err());
        assert!(parse_wg("abc").is_err());
        assert_eq!(
            kernel_seconds(
                "tpace: a.c:1:2: trace: 3 operations written to x; in 0.1 s, kernels ran 0.012500 s and"
            ),
            Some(0.0125)
        );
    }
}
