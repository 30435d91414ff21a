//! `tpace tune`: translate and build a program once, run it over a sweep of
//! schedule × k × b × streams, write the measurements (`results.csv`) and a
//! k × b heat map of the best schedule (`heatmap.svg`), and compare the best
//! measured configuration with the performance model's pick.

use super::heatmap::HeatMap;
use super::run::{Flavour, Toolchain, build, parse_report};
use super::{Compiled, Failure, today, translate_for, write_atomically};
use crate::back::Target;
use crate::model::expr::Macros;
use crate::model::report::parse_bytes;
use crate::model::search::choose_at;
use crate::model::{self, Config, Machine, Profile, Workload, predict, workload};
use crate::plan::Schedule;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `tpace tune` was asked.
#[derive(Debug, Clone)]
pub struct TuneRequest {
    /// Target language.
    pub target: Target,
    /// Machine profile for the model: a bundled name or a file.
    pub machine: String,
    /// `NAME=VALUE` macro values: compiled in as `-DNAME=VALUE` and used for the extents.
    pub set: Vec<String>,
    /// Schedules to sweep (empty: mmtb, mm, naive, incore).
    pub schedules: Vec<Schedule>,
    /// k values (empty: powers of two up to 64 and at most the step count).
    pub k: Vec<u64>,
    /// Chunk widths (empty: n, n/2, n/4, n/8, n/16, rounded up).
    pub chunk: Vec<u64>,
    /// Stream counts (empty: 1, 2, 3).
    pub streams: Vec<u64>,
    /// Device-memory cap (`TPACE_DEVICE_MEM` for the runs, the cap for the model).
    pub mem_cap: Option<String>,
    /// Step count, when neither the source nor a run tells it.
    pub steps: Option<u64>,
    /// Output folder (default `tune-NAME`, NAME the input's file stem).
    pub out: Option<PathBuf>,
    /// Arguments for every run of the program.
    pub args: Vec<String>,
    /// Extra compiler flags appended to the build (split at white space).
    pub cflags: Vec<String>,
    /// OpenCL: work-group shapes to sweep (`64x4x1`; empty: every power-of-two shape).
    pub wg: Vec<String>,
    /// OpenCL: steps per tiled kernel to sweep (empty: 1 to the kernels' limit).
    pub t: Vec<u64>,
}

/// How one run of the sweep ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// It ran and printed its report.
    Ok,
    /// The program refused the configuration (exit code 2), with its message.
    Refused(String),
    /// It failed otherwise (a crash, another exit code, no report).
    Failed(String),
}

impl Status {
    /// The CSV `status` field.
    pub fn text(&self) -> String {
        match self {
            Status::Ok => "ok".into(),
            Status::Refused(m) => format!("refused: {m}"),
            Status::Failed(m) => format!("failed: {m}"),
        }
    }
}

/// One configuration of the sweep, as asked (None: the program's default or not applicable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// Schedule.
    pub schedule: Schedule,
    /// `TPACE_K` (None for incore and naive).
    pub k: Option<u64>,
    /// `TPACE_CHUNK` (None for incore).
    pub b: Option<u64>,
    /// `TPACE_STREAMS` (None for incore).
    pub streams: Option<u64>,
}

impl Point {
    /// `mmtb k=8 b=250 S=3`, leaving out what does not apply.
    pub fn label(&self) -> String {
        let mut s = self.schedule.name().to_string();
        for (name, v) in [("k", self.k), ("b", self.b), ("S", self.streams)] {
            if let Some(v) = v {
                let _ = write!(s, " {name}={v}");
            }
        }
        s
    }

    /// The model's configuration for this point.
    pub fn config(&self) -> Config {
        Config {
            schedule: model_schedule(self.schedule),
            k: self.k.unwrap_or(1),
            b: self.b.unwrap_or(1),
            streams: self.streams.unwrap_or(1),
        }
    }
}

/// One measured (or refused) configuration.
#[derive(Debug, Clone)]
pub struct Measured {
    /// What was asked.
    pub point: Point,
    /// How the run ended.
    pub status: Status,
    /// The `tpace:` report line's key=value pairs (empty unless Ok).
    pub report: BTreeMap<String, String>,
    /// Seconds of the time loop.
    pub seconds: Option<f64>,
    /// Glup/s the program reported.
    pub glups: Option<f64>,
    /// Predicted seconds (None when the model refuses the profile or the configuration).
    pub predicted: Option<f64>,
}

impl Measured {
    /// A number from the report.
    fn num(&self, key: &str) -> Option<u64> {
        self.report.get(key).and_then(|v| v.parse().ok())
    }

    /// The k, b and streams the program used (when it ran), else those asked.
    pub fn used(&self) -> (Option<u64>, Option<u64>, Option<u64>) {
        if self.status == Status::Ok {
            (self.num("k"), self.num("b"), self.num("streams"))
        } else {
            (self.point.k, self.point.b, self.point.streams)
        }
    }
}

/// The outcome of `tpace tune`.
#[derive(Debug, Clone)]
pub struct TuneOutcome {
    /// The final report for standard output.
    pub summary: String,
    /// Every run of the sweep, in order.
    pub results: Vec<Measured>,
    /// The folder the CSV and the SVG went to.
    pub out: PathBuf,
}

/// The model's schedule for a plan schedule.
fn model_schedule(s: Schedule) -> model::Schedule {
    match s {
        Schedule::Naive => model::Schedule::Naive,
        Schedule::Mm => model::Schedule::Mm,
        Schedule::Mmtb => model::Schedule::Mmtb,
        Schedule::Incore => model::Schedule::Incore,
    }
}

/// Default k values: the powers of two up to 64 that are at most the step
/// count, and the step count itself when it is below 64 (a handful of the
/// model's [`k_candidates`](crate::model::search::k_candidates), which are
/// every k to 32 and then steps of a quarter).
pub fn default_ks(steps: u64) -> Vec<u64> {
    let mut ks: Vec<u64> = (0..=6).map(|e| 1u64 << e).filter(|&k| k <= steps).collect();
    if (1..64).contains(&steps) {
        ks.push(steps);
    }
    ks.sort_unstable();
    ks.dedup();
    if ks.is_empty() { vec![1] } else { ks }
}

/// Default chunk widths: n, n/2, n/4, n/8, n/16, rounded up, without repeats.
pub fn default_bs(n: u64) -> Vec<u64> {
    let mut bs: Vec<u64> = [1, 2, 4, 8, 16]
        .iter()
        .map(|c| n.max(1).div_ceil(*c))
        .collect();
    bs.dedup();
    bs
}

/// Chunk widths for the sweep when none are given under a memory cap: the widest
/// chunk that fits `cap` for the smallest k and stream count swept (of any
/// out-of-core schedule swept), then half, a quarter, ... of it, as
/// [`default_bs`] does with the whole extent; `None` when no chunk fits.
pub fn default_bs_within(
    w: &Workload,
    schedules: &[Schedule],
    ks: &[u64],
    ss: &[u64],
    cap: u128,
) -> Option<Vec<u64>> {
    let k = ks.iter().copied().min().unwrap_or(1);
    let streams = ss.iter().copied().min().unwrap_or(1);
    let widest = schedules
        .iter()
        .filter(|s| **s != Schedule::Incore)
        .filter_map(|&schedule| {
            let k = if schedule == Schedule::Naive { 1 } else { k };
            // Memory grows with b but not strictly (the slots in use change), so scan.
            (1..=w.n).rev().find(|&b| {
                let c = Config {
                    schedule: model_schedule(schedule),
                    k,
                    b,
                    streams,
                };
                model::predict::device_bytes(w, c) <= cap
            })
        })
        .max()?;
    Some(default_bs(widest))
}

/// Every configuration of the sweep: incore once, naive over b × streams
/// (k is always 1), mm and mmtb over k × b × streams.
pub fn sweep_points(schedules: &[Schedule], ks: &[u64], bs: &[u64], ss: &[u64]) -> Vec<Point> {
    let mut points = Vec::new();
    for &schedule in schedules {
        let k_list: Vec<Option<u64>> = match schedule {
            Schedule::Incore => {
                points.push(Point {
                    schedule,
                    k: None,
                    b: None,
                    streams: None,
                });
                continue;
            }
            Schedule::Naive => vec![None],
            Schedule::Mm | Schedule::Mmtb => ks.iter().copied().map(Some).collect(),
        };
        for &k in &k_list {
            for &b in bs {
                for &s in ss {
                    points.push(Point {
                        schedule,
                        k,
                        b: Some(b),
                        streams: Some(s),
                    });
                }
            }
        }
    }
    points
}

/// Run the built program once with a configuration.
fn run_point(binary: &Path, args: &[String], point: &Point, mem_cap: Option<u128>) -> Measured {
    let mut cmd = Command::new(binary);
    cmd.args(args);
    for v in [
        "TPACE_SCHEDULE",
        "TPACE_K",
        "TPACE_CHUNK",
        "TPACE_STREAMS",
        "TPACE_DUMP",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("TPACE_SCHEDULE", point.schedule.name());
    for (name, v) in [
        ("TPACE_K", point.k),
        ("TPACE_CHUNK", point.b),
        ("TPACE_STREAMS", point.streams),
    ] {
        if let Some(v) = v {
            cmd.env(name, v.to_string());
        }
    }
    if let Some(cap) = mem_cap {
        cmd.env("TPACE_DEVICE_MEM", cap.to_string());
    }
    let mut m = Measured {
        point: *point,
        status: Status::Ok,
        report: BTreeMap::new(),
        seconds: None,
        glups: None,
        predicted: None,
    };
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            m.status = Status::Failed(format!("cannot run {}: {e}", binary.display()));
            return m;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let message = last_message(&stderr);
        m.status = if out.status.code() == Some(2) {
            Status::Refused(message)
        } else {
            Status::Failed(format!("{}: {message}", out.status))
        };
        return m;
    }
    m.report = parse_report(&stderr);
    m.seconds = m.report.get("seconds").and_then(|s| s.parse().ok());
    m.glups = m.report.get("glups").and_then(|s| s.parse().ok());
    if m.seconds.is_none() {
        m.status = Status::Failed("no `tpace:` report line with seconds=".into());
    }
    m
}

/// The program's last `tpace:` message, without the prefix and the source location.
fn last_message(stderr: &str) -> String {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("tpace: "))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("(no message)");
    let rest = line.strip_prefix("tpace: ").unwrap_or(line);
    match rest.split_once(": ") {
        Some((loc, msg)) if loc.matches(':').count() >= 2 && !loc.contains(' ') => msg.into(),
        _ => rest.into(),
    }
}

/// Format a number of seconds for people.
fn secs(s: f64) -> String {
    if s >= 0.1 {
        format!("{s:.3}")
    } else if s >= 0.001 {
        format!("{s:.4}")
    } else {
        format!("{s:.2e}")
    }
}

/// One progress line.
fn progress(i: usize, n: usize, m: &Measured) -> String {
    let what = match &m.status {
        Status::Ok => format!(
            "{} s, {:.3} Glup/s",
            secs(m.seconds.unwrap_or(0.0)),
            m.glups.unwrap_or(0.0)
        ),
        Status::Refused(msg) => format!("refused ({msg})"),
        Status::Failed(msg) => format!("FAILED ({msg})"),
    };
    format!("[{i}/{n}] {}: {what}", m.point.label())
}

/// A CSV field, quoted when it has to be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The model's relative error on a run, (predicted - measured) / measured: negative
/// when the model is optimistic.
pub fn prediction_error(m: &Measured) -> Option<f64> {
    let measured = m.seconds.filter(|s| *s > 0.0)?;
    Some((m.predicted? - measured) / measured)
}

/// `results.csv`: one row per configuration.
pub fn csv(results: &[Measured]) -> String {
    let mut out = String::from(
        "schedule,k,b,streams,chunks,seconds,glups,device_bytes,predicted_seconds,error,status\n",
    );
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for m in results {
        let (k, b, s) = m.used();
        let get = |key: &str| m.report.get(key).cloned().unwrap_or_default();
        let row = [
            m.point.schedule.name().to_string(),
            opt(k),
            opt(b),
            opt(s),
            get("chunks"),
            get("seconds"),
            get("glups"),
            get("device_bytes"),
            m.predicted.map_or(String::new(), |p| format!("{p:.6e}")),
            prediction_error(m).map_or(String::new(), |e| format!("{e:+.3}")),
            m.status.text(),
        ];
        let row: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        let _ = writeln!(out, "{}", row.join(","));
    }
    out
}

/// The heat map's cells for one schedule: the best Glup/s over streams of
/// every (k, b) the program ran, and the (k, b) pairs it refused or failed.
type Cells = (BTreeMap<(u64, u64), f64>, Vec<(u64, u64)>);

/// Cells of `schedule`, keyed by the k and b the program used.
pub fn heat_cells(results: &[Measured], schedule: Schedule) -> Cells {
    let mut best: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    let mut missing = Vec::new();
    for m in results.iter().filter(|m| m.point.schedule == schedule) {
        let (k, b, _) = m.used();
        let key = (k.unwrap_or(1), b.unwrap_or(0));
        match (&m.status, m.glups) {
            (Status::Ok, Some(g)) => {
                let e = best.entry(key).or_insert(g);
                *e = e.max(g);
            }
            _ => missing.push(key),
        }
    }
    missing.retain(|key| !best.contains_key(key));
    missing.sort_unstable();
    missing.dedup();
    (best, missing)
}

/// `heatmap.svg`: a k × b grid of the best schedule's cells coloured by
/// Glup/s with the value in each cell; one `<rect>` per measured cell.
pub fn heatmap(results: &[Measured], schedule: Schedule, title: &str) -> String {
    let (cells, missing) = heat_cells(results, schedule);
    let mut ks: Vec<u64> = cells.keys().chain(&missing).map(|(k, _)| *k).collect();
    let mut bs: Vec<u64> = cells.keys().chain(&missing).map(|(_, b)| *b).collect();
    ks.sort_unstable();
    ks.dedup();
    bs.sort_unstable();
    bs.dedup();
    let at = |(k, b): &(u64, u64)| {
        let i = ks.binary_search(k).expect("a listed k");
        (i, bs.binary_search(b).expect("a listed b"))
    };
    let subtitle = format!(
        "schedule {}: Glup/s, best over streams (darker is faster)",
        schedule.name()
    );
    HeatMap {
        title,
        subtitle: &subtitle,
        rows: ks.iter().map(u64::to_string).collect(),
        columns: bs.iter().map(u64::to_string).collect(),
        cells: cells.iter().map(|(key, g)| (at(key), *g)).collect(),
        refused: missing.iter().map(at).collect(),
        outlined: None,
        cell_name: &|i, j| format!("k={} b={}", ks[i], bs[j]),
        column_axis: "chunk width b (planes)",
        row_axis: Some("time steps per transfer k"),
        cell: (84.0, 40.0),
        left: 90.0,
        bottom: 70.0,
    }
    .svg()
}

/// How a build for `target` runs here, in words.
/// Statically allocated arrays beyond this many bytes need a code model other
/// than x86-64's default, which keeps all static data within 2 GiB (some of the
/// room is left to the program's other data).
const SMALL_CODE_MODEL_BYTES: u128 = 1 << 30;

/// `-mcmodel=medium` (through `-Xcompiler` for nvcc) when the listed arrays
/// declared with their shape (static storage) exceed [`SMALL_CODE_MODEL_BYTES`]
/// at these extents; without it the link fails with "relocation truncated".
pub fn large_static_flags(compiled: &Compiled, extents: &[u64], flavour: Flavour) -> Vec<String> {
    let points: u128 = extents.iter().map(|e| u128::from(*e)).product();
    let mut seen: Vec<&str> = Vec::new();
    let mut bytes: u128 = 0;
    for a in compiled.program.pipelines.iter().flat_map(|p| &p.arrays) {
        if a.layout == crate::ir::Layout::Static && !seen.contains(&a.name.as_str()) {
            seen.push(&a.name);
            bytes += points * u128::from(a.elem.bytes());
        }
    }
    if bytes <= SMALL_CODE_MODEL_BYTES {
        return Vec::new();
    }
    match flavour {
        Flavour::CudaDevice => vec!["-Xcompiler".into(), "-mcmodel=medium".into()],
        _ => vec!["-mcmodel=medium".into()],
    }
}

fn where_it_runs(tc: &Toolchain, flavour: Flavour) -> String {
    match flavour {
        Flavour::CudaDevice => "CUDA on the GPU (nvcc)".into(),
        Flavour::CudaEmulation => {
            format!(
                "CUDA on the CPU emulation ({}; no GPU or no nvcc here)",
                tc.cxx
            )
        }
        _ if tc.gpu => format!(
            "OpenACC ({} {}; a GPU is present, where it runs depends on the compiler's offload support)",
            tc.cc,
            tc.openacc_flags.join(" ")
        ),
        _ => format!(
            "OpenACC on the host ({} {}; no GPU here)",
            tc.cc,
            tc.openacc_flags.join(" ")
        ),
    }
}

/// Translate and build once, sweep, write `results.csv` and `heatmap.svg`,
/// and compare the best measured configuration with the model's pick.
/// Progress goes to standard error, one line per run. Fails when no
/// configuration ran.
pub fn tune(
    compiled: &Compiled,
    tc: &Toolchain,
    req: &TuneRequest,
) -> Result<TuneOutcome, Failure> {
    let fail = |e: String| Failure(format!("error: {e}\n"));
    let program = &compiled.program;
    if program.pipelines.len() > 1 {
        return Err(fail(format!(
            "{} has {} pipelined time loops; `tpace tune` sweeps a program with one, since the TPACE_* \
             settings it varies apply to every loop\n  help: tune each loop in a file of its own",
            program.path,
            program.pipelines.len()
        )));
    }
    let unit = compiled.unit(0);
    let macros = Macros::for_program(&req.set, program).map_err(fail)?;
    let extents = workload::extents(unit, &macros)
        .map_err(|e| fail(format!("{e}\n  help: give its value with --set NAME=VALUE")))?;
    let profile = Profile::load(&req.machine).map_err(fail)?;
    let mem_cap = req
        .mem_cap
        .as_deref()
        .map(|m| parse_bytes(m).map_err(|e| fail(format!("--mem-cap {e}"))))
        .transpose()?;
    for (name, list) in [
        ("--k", &req.k),
        ("--chunk", &req.chunk),
        ("--streams", &req.streams),
    ] {
        if list.contains(&0) {
            return Err(fail(format!("{name}: values must be at least 1")));
        }
    }
    let stem = Path::new(&program.path)
        .file_stem()
        .map_or("program".to_string(), |s| s.to_string_lossy().into_owned());
    let out_dir = req
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tune-{stem}")));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", out_dir.display())))?;

    // Build once (the source's folder searched for its quoted includes).
    let mut tc = super::run::with_source_dir(tc, &program.path);
    // Macro values are compiled in; a struct member's (`p->mrows=513`) is the model's only.
    let is_macro = |s: &&String| {
        let name = s.split_once('=').map_or(s.as_str(), |(n, _)| n).trim();
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    };
    tc.defines.extend(
        req.set
            .iter()
            .filter(is_macro)
            .map(|s| s.trim().to_string()),
    );
    let flavour = match req.target {
        Target::Openacc => Flavour::Openacc,
        Target::Cuda => tc.cuda_flavour(),
        Target::Opencl => Flavour::Opencl,
    };
    tc.extra_flags
        .extend(large_static_flags(compiled, &extents, flavour));
    tc.extra_flags.extend(
        req.cflags
            .iter()
            .flat_map(|f| f.split_whitespace().map(String::from)),
    );
    let how = where_it_runs(&tc, flavour);
    let scratch =
        tempfile::tempdir().map_err(|e| fail(format!("cannot make a scratch folder: {e}")))?;
    eprintln!("tune: building {} for {how}", program.path);
    let built = build(
        &tc,
        &translate_for(compiled, req.target, &profile, false)?,
        scratch.path(),
        "translated",
        flavour,
    )?;

    // The step count: given, from the source, or from one run with the program's defaults.
    let mut steps = req.steps.or_else(|| workload::steps(unit, &macros).ok());
    if steps.is_none() && req.k.is_empty() {
        let mut probe = Command::new(&built.binary);
        probe.args(&req.args);
        for v in [
            "TPACE_SCHEDULE",
            "TPACE_K",
            "TPACE_CHUNK",
            "TPACE_STREAMS",
            "TPACE_DUMP",
        ] {
            probe.env_remove(v);
        }
        let out = probe
            .output()
            .map_err(|e| fail(format!("cannot run {}: {e}", built.binary.display())))?;
        let report = parse_report(&String::from_utf8_lossy(&out.stderr));
        steps = report.get("steps").and_then(|s| s.parse().ok());
        if steps.is_none() {
            return Err(fail(
                "the step count is a run-time value and a run with the program's defaults did not report it\n  help: give --steps N or --k LIST".into(),
            ));
        }
        eprintln!(
            "tune: {} steps (from a run with the program's defaults)",
            steps.unwrap_or(0)
        );
    }

    let schedules: Vec<Schedule> = if req.schedules.is_empty() {
        vec![
            Schedule::Mmtb,
            Schedule::Mm,
            Schedule::Naive,
            Schedule::Incore,
        ]
    } else {
        let mut s = req.schedules.clone();
        s.dedup();
        s
    };
    let ks = if req.k.is_empty() {
        default_ks(steps.unwrap_or(1))
    } else {
        req.k.clone()
    };
    let ss = if req.streams.is_empty() {
        vec![1, 2, 3]
    } else {
        req.streams.clone()
    };
    let bs = if req.chunk.is_empty() {
        // Under a cap, fractions of the widest chunk that fits rather than of the grid.
        let within = mem_cap.and_then(|cap| {
            let w = Workload::from_unit(unit, &extents, steps.unwrap_or(1)).ok()?;
            default_bs_within(
                &swept_workload(w, req.target, unit, &profile),
                &schedules,
                &ks,
                &ss,
                cap,
            )
        });
        within.unwrap_or_else(|| default_bs(extents[0]))
    } else {
        req.chunk.clone()
    };
    let points = sweep_points(&schedules, &ks, &bs, &ss);

    // Sweep: a progress bar on a terminal, one line per run in logs.
    let bar = indicatif::ProgressBar::new(points.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("tune {bar:40} {pos}/{len} runs, eta {eta} {msg}")
            .expect("a valid progress template"),
    );
    let mut results = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        bar.set_message(p.label());
        let m = run_point(&built.binary, &req.args, p, mem_cap);
        let line = progress(i + 1, points.len(), &m);
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
        bar.inc(1);
        results.push(m);
    }
    bar.finish_and_clear();
    // The runs know the step count best.
    if let Some(s) = results
        .iter()
        .filter(|m| m.status == Status::Ok)
        .find_map(|m| m.num("steps"))
    {
        steps = Some(s);
    }

    // The model: a prediction for every point, and its pick.
    let machine = Machine::from_profile(&profile);
    let wl = steps
        .ok_or_else(|| "the step count is unknown (give --steps N)".to_string())
        .and_then(|s| Workload::from_unit(unit, &extents, s))
        .map(|w| swept_workload(w, req.target, unit, &profile));
    let model = match (&machine, &wl) {
        (Ok(m), Ok(w)) => Ok((m, w)),
        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
    };
    if let Ok((m, w)) = &model {
        for r in &mut results {
            r.predicted = predict(w, m, r.point.config()).ok().map(|p| p.total_s);
        }
    }

    let ran: Vec<&Measured> = results.iter().filter(|m| m.status == Status::Ok).collect();
    let title = format!(
        "{}: {} ({}), profile {}, {}",
        program.path,
        req.target.name(),
        match flavour {
            Flavour::CudaDevice => "GPU",
            Flavour::CudaEmulation => "CPU emulation",
            _ if tc.gpu => "OpenACC build",
            _ => "host, no GPU",
        },
        profile.name,
        today()
    );
    let csv_path = out_dir.join("results.csv");
    write_atomically(&csv_path, &csv(&results))?;
    let best = ran.iter().copied().min_by(|a, b| {
        a.seconds
            .unwrap_or(f64::MAX)
            .total_cmp(&b.seconds.unwrap_or(f64::MAX))
    });
    let svg_path = out_dir.join("heatmap.svg");
    if let Some(b) = best {
        write_atomically(&svg_path, &heatmap(&results, b.point.schedule, &title))?;
    }

    let refused = results
        .iter()
        .filter(|m| matches!(m.status, Status::Refused(_)))
        .count();
    let failed: Vec<&Measured> = results
        .iter()
        .filter(|m| matches!(m.status, Status::Failed(_)))
        .collect();
    let Some(best) = best else {
        return Err(fail(format!(
            "none of the {} configuration(s) ran ({refused} refused, {} failed; see {})\n  help: {}",
            results.len(),
            failed.len(),
            csv_path.display(),
            if refused > 0 {
                "raise --mem-cap, or sweep smaller --k, --chunk and --streams"
            } else {
                "run one configuration with `tpace run` to see why"
            }
        )));
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: tuned on {how}; {} configuration(s): {} ran, {refused} refused, {} failed",
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
    let used = |m: &Measured| {
        let (k, b, st) = m.used();
        let o = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        format!(
            "{} k={} b={} streams={} chunks={}",
            m.point.schedule.name(),
            o(k),
            o(b),
            o(st),
            m.report.get("chunks").map_or("?", |c| c.as_str())
        )
    };
    let _ = writeln!(
        s,
        "best measured: {}: {} s, {:.3} Glup/s",
        used(best),
        secs(best.seconds.unwrap_or(0.0)),
        best.glups.unwrap_or(0.0)
    );

    match &model {
        Err(e) => {
            let _ = writeln!(s, "model's pick: none (the model refuses: {e})");
        }
        Ok((m, w)) => {
            let cap = match (mem_cap, m.memory_bytes) {
                (Some(c), Some(mb)) => Some(c.min(mb as u128)),
                (c, mb) => c.or(mb.map(|mb| mb as u128)),
            };
            match choose_at(w, m, cap) {
                Err(e) => {
                    let _ = writeln!(s, "model's pick: none ({e})");
                }
                Ok(choice) => {
                    let swept: Vec<model::Schedule> =
                        schedules.iter().map(|s| model_schedule(*s)).collect();
                    let mut all = vec![choice.best.clone()];
                    all.extend(choice.alternatives.iter().cloned());
                    let within = all
                        .iter()
                        .filter(|p| swept.contains(&p.config.schedule))
                        .min_by(|a, b| a.total_s.total_cmp(&b.total_s));
                    let (pick, note) = match within {
                        Some(p) => (p.clone(), ""),
                        None => (choice.best.clone(), " (not a swept schedule)"),
                    };
                    let c = pick.config;
                    let plan_schedule = Schedule::ALL
                        .into_iter()
                        .find(|s| model_schedule(*s) == c.schedule)
                        .unwrap_or(Schedule::Mmtb);
                    let pick_point = Point {
                        schedule: plan_schedule,
                        k: matches!(c.schedule, model::Schedule::Mm | model::Schedule::Mmtb)
                            .then_some(c.k),
                        b: (c.schedule != model::Schedule::Incore).then_some(c.b),
                        streams: (c.schedule != model::Schedule::Incore).then_some(c.streams),
                    };
                    let _ = writeln!(
                        s,
                        "model's pick ({}, {} steps, cap {}): {}{note}, predicted {} s",
                        profile.name,
                        w.steps,
                        cap.map_or("none".to_string(), |c| model::predict::bytes(c as f64)),
                        pick_point.label(),
                        secs(pick.total_s)
                    );
                    let matches = |r: &&Measured| {
                        if r.status != Status::Ok || r.point.schedule != plan_schedule {
                            return false;
                        }
                        if c.schedule == model::Schedule::Incore {
                            return true;
                        }
                        let asked = model::predict::normalise(w, r.point.config()).ok();
                        let (k, b, st) = r.used();
                        asked == Some(c)
                            || (k == Some(c.k) && b == Some(c.b) && st == Some(c.streams))
                    };
                    let (measured, how_got) = match ran.iter().copied().find(|r| matches(r)) {
                        Some(r) => (r.clone(), "in the sweep"),
                        None => {
                            let m = run_point(&built.binary, &req.args, &pick_point, mem_cap);
                            eprintln!(
                                "{}",
                                progress(1, 1, &m).replacen("[1/1]", "[model pick]", 1)
                            );
                            (m, "run once more")
                        }
                    };
                    match (&measured.status, measured.seconds) {
                        (Status::Ok, Some(t)) => {
                            let _ = writeln!(
                                s,
                                "  measured ({how_got}): {} s, {:.3} Glup/s",
                                secs(t),
                                measured.glups.unwrap_or(0.0)
                            );
                            let ratio = best.seconds.unwrap_or(0.0) / t;
                            let _ = writeln!(
                                s,
                                "ratio model pick / best measured: {ratio:.3} (rate of the model's pick over the best rate)"
                            );
                        }
                        (st, _) => {
                            let _ = writeln!(
                                s,
                                "  measured ({how_got}): {}\nratio model pick / best measured: none (the pick did not run)",
                                st.text()
                            );
                        }
                    }
                }
            }
        }
    }
    if flavour != Flavour::CudaDevice {
        let _ = writeln!(
            s,
            "note: these times are not from a GPU; profile {} describes another machine, so the ratio says nothing about the model there",
            profile.name
        );
    }
    if !failed.is_empty() {
        let _ = writeln!(s, "warning: {} configuration(s) failed:", failed.len());
        for f in &failed {
            let _ = writeln!(s, "  {}: {}", f.point.label(), f.status.text());
        }
    }
    Ok(TuneOutcome {
        summary: s,
        results,
        out: out_dir,
    })
}

/// The workload of the programs the sweep runs: one step per kernel for a target
/// whose kernels do not fuse steps; for CUDA, the program's fused step count, or
/// the one `TPACE_FUSE` in the environment sets (the runs inherit it), as far as
/// the machine's shared memory lets the translation fuse steps.
fn swept_workload(
    w: Workload,
    target: Target,
    unit: crate::plan::Unit<'_>,
    profile: &Profile,
) -> Workload {
    let fusion = crate::model::workload::fusion_on(unit, profile);
    let w = w.with_fusion(
        fusion.as_ref().filter(|_| target.fuses_steps()),
        &unit.pipeline.arrays,
    );
    let Some(most) = fusion.filter(|_| target.fuses_steps()).map(|f| f.max_steps) else {
        return w;
    };
    let set = std::env::var("TPACE_FUSE")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    match set {
        Some(f) if f >= 1 && w.fuse > 1 => Workload {
            fuse: f.min(most.into()),
            ..w
        },
        _ => w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_a_cap_the_default_chunks_are_fractions_of_the_widest_that_fits() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
        let compiled = crate::driver::compile_file(&path).expect("jacobi2d compiles");
        let w = Workload::from_unit(compiled.unit(0), &[16384, 32768], 64).expect("a workload");
        let cap: u128 = 1_500_000_000;
        let schedules = [Schedule::Mmtb, Schedule::Mm];
        let bs = default_bs_within(&w, &schedules, &[8, 16], &[2, 3], cap).expect("some fit");
        let fits = |schedule, b| {
            let c = Config {
                schedule: model_schedule(schedule),
                k: 8,
                b,
                streams: 2,
            };
            model::predict::device_bytes(&w, c) <= cap
        };
        // The first is the widest chunk one of the swept schedules fits at the smallest k and S.
        assert!(schedules.iter().any(|s| fits(*s, bs[0])), "{bs:?}");
        assert!(!schedules.iter().any(|s| fits(*s, bs[0] + 1)), "{bs:?}");
        assert_eq!(bs, default_bs(bs[0]));
        assert!(bs[0] < 16384, "{bs:?}");
        // A cap that holds nothing gives no list (the caller falls back to the grid's).
        assert_eq!(default_bs_within(&w, &schedules, &[8], &[2], 1000), None);
    }

    #[test]
    fn defaults_and_points() {
        assert_eq!(default_ks(7), vec![1, 2, 4, 7]);
        assert_eq!(default_ks(1000), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(default_ks(0), vec![1]);
        assert_eq!(default_bs(1000), vec![1000, 500, 250, 125, 63]);
        assert_eq!(default_bs(3), vec![3, 2, 1]);
        let p = sweep_points(
            &[Schedule::Mmtb, Schedule::Naive, Schedule::Incore],
            &[1, 4],
            &[100, 333],
            &[2, 3],
        );
        assert_eq!(p.len(), 2 * 2 * 2 + 2 * 2 + 1);
        assert_eq!(p[0].label(), "mmtb k=1 b=100 S=2");
        assert_eq!(p.last().unwrap().label(), "incore");
    }

    #[test]
    fn messages_and_csv() {
        assert_eq!(
            last_message("x\ntpace: a.c:3:4: the plan needs 9 MB\n"),
            "the plan needs 9 MB"
        );
        assert_eq!(
            last_message("tpace: TPACE_K=0 is not a whole number"),
            "TPACE_K=0 is not a whole number"
        );
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("x\"y"), "\"x\"\"y\"");
    }
}
