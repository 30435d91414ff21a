//! `tpace probe`: measure the current CUDA device and write a machine profile
//! (the figures `tpace plan`'s model reads) instead of copying them by hand.
//!
//! The probe is a small CUDA program (`probe.cu`) built with nvcc and run on the
//! GPU; built with the C++ compiler it runs on the CPU emulation of the CUDA
//! runtime, which only tests the path (its figures are the CPU's). Then
//! [`kernels`] times the kernels tpace itself emits, per element type, shape
//! class and steps per kernel (the profile's `[[kernels]]`).
//! `tpace probe --into FILE` refreshes an existing profile in place:
//! [`update_profile`].

pub mod kernels;
pub mod segments;

use crate::back::Output;
use crate::back::cuda::EMULATION;
use crate::driver::Failure;
use crate::driver::run::{Flavour, Toolchain, build};
use crate::runtime::BASE;
use std::collections::BTreeMap;
use std::process::Command;

/// The probe program, after the runtime's clock and the emulation.
pub const PROBE: &str = include_str!("probe.cu");

/// The exchange probe (`--mpi`): two MPI ranks exchanging ghost-plane-sized messages.
pub const EXCHANGE: &str = include_str!("exchange.c");

/// What each figure the probe prints measures, in the profile's words.
pub const FIGURES: [(&str, &str); 12] = [
    (
        "memory_gbs",
        "device-to-device copy, bytes read + written per second",
    ),
    ("h2d_gbs", "host-to-device copy from page-locked memory"),
    ("d2h_gbs", "device-to-host copy into page-locked memory"),
    ("duplex_gbs", "both directions at once, the two together"),
    (
        "h2d_pageable_gbs",
        "host-to-device copy from pageable memory",
    ),
    (
        "launch_overhead_us",
        "an empty kernel launch, 2000 in one stream",
    ),
    ("memory_gb", "device memory as cudaMemGetInfo reports it"),
    (
        "compute_units",
        "multiprocessors (cudaDevAttrMultiProcessorCount)",
    ),
    ("l2_bytes", "L2 cache (cudaDevAttrL2CacheSize)"),
    (
        "shared_bytes",
        "shared memory one block may use (cudaDevAttrMaxSharedMemoryPerBlockOptin)",
    ),
    (
        "exchange_gbs",
        "two MPI ranks exchanging at once (MPI_Sendrecv), bytes one receives per second",
    ),
    (
        "exchange_latency_us",
        "two MPI ranks exchanging 8 bytes at once (MPI_Sendrecv)",
    ),
];

/// Measure the exchange between two MPI ranks (`mpirun -np 2`) with messages of
/// `bytes` bytes: the figures `exchange_gbs` and `exchange_latency_us`.
pub fn probe_exchange(tc: &Toolchain, bytes: u64) -> Result<BTreeMap<String, f64>, Failure> {
    let dir = tempfile::tempdir()
        .map_err(|e| Failure(format!("error: cannot make a scratch folder: {e}\n")))?;
    let source = dir.path().join("exchange.c");
    let binary = dir.path().join("exchange");
    std::fs::write(&source, EXCHANGE)
        .map_err(|e| Failure(format!("error: cannot write {}: {e}\n", source.display())))?;
    let built = Command::new(&tc.mpicc)
        .args(["-O2", "-std=gnu11"])
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .output()
        .map_err(|e| {
            Failure(format!(
                "error: cannot run `{}`: {e}\n  help: install Open MPI or set MPICC\n",
                tc.mpicc
            ))
        })?;
    if !built.status.success() {
        return Err(Failure(format!(
            "error: the exchange probe does not build:\n{}",
            String::from_utf8_lossy(&built.stderr)
        )));
    }
    let out = Command::new(&tc.mpirun)
        .args(["--oversubscribe", "-np", "2"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(&binary)
        .arg(bytes.min(1 << 30).to_string())
        .output()
        .map_err(|e| Failure(format!("error: cannot run `{}`: {e}\n", tc.mpirun)))?;
    if !out.status.success() {
        return Err(Failure(format!(
            "error: the exchange probe failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

/// The figures one probe run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    /// Figure name to value, for the names of [`FIGURES`] the run printed.
    pub values: BTreeMap<String, f64>,
    /// The device, as `nvidia-smi` names it, or the emulation.
    pub device: String,
    /// Whether it ran on the CPU emulation rather than a GPU.
    pub emulated: bool,
    /// Bytes per copy.
    pub bytes: u64,
    /// The kernels' measured times (empty where not probed).
    pub kernels: Vec<kernels::KernelRun>,
    /// Figures measured otherwise than [`FIGURES`] says, and how (the profile's source).
    pub how: BTreeMap<String, String>,
}

/// Build and run the probe with copies of `bytes` bytes, and with `with_kernels`
/// time tpace's kernels ([`kernels::probe_kernels`]; `log` gets a line per run).
/// Without nvcc and a GPU it refuses, unless `emulate` asks for the CPU emulation.
pub fn probe(
    tc: &Toolchain,
    bytes: u64,
    emulate: bool,
    with_kernels: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Probed, Failure> {
    let flavour = match (tc.nvcc.is_some() && tc.gpu, emulate) {
        (true, false) => Flavour::CudaDevice,
        (_, true) => Flavour::CudaEmulation,
        (false, false) => {
            return Err(Failure(
                "error: tpace probe needs nvcc and a CUDA GPU (`nvidia-smi -L` lists none here)\n  \
                 help: run it on the GPU machine; `--emulate` runs the probe on the CPU emulation \
                 instead, which only tests the probe\n"
                    .into(),
            ));
        }
    };
    let dir = tempfile::tempdir()
        .map_err(|e| Failure(format!("error: cannot make a scratch folder: {e}\n")))?;
    let text = format!("{BASE}\n{EMULATION}\n{PROBE}");
    let output = Output {
        main: text,
        host: None,
    };
    let built = build(tc, &output, dir.path(), "probe", flavour)?;
    let out = Command::new(&built.binary)
        .arg(bytes.to_string())
        .output()
        .map_err(|e| Failure(format!("error: cannot run the probe: {e}\n")))?;
    if !out.status.success() {
        return Err(Failure(format!(
            "error: the probe failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let values = parse(&String::from_utf8_lossy(&out.stdout));
    let device = if flavour == Flavour::CudaEmulation {
        "the CPU emulation of CUDA (not a GPU)".to_string()
    } else {
        device_name()
    };
    let mut values = values;
    let mut how = BTreeMap::new();
    let kernels = if with_kernels {
        // The launch gaps come out of the kernel figures (the model adds them itself).
        let launch_s = values.get("launch_overhead_us").map_or(0.0, |us| us * 1e-6);
        // Fused launches aim at one wave of the device's multiprocessors: the figures say how many.
        let units = values.get("compute_units").map_or(0, |u| *u as u64);
        let k = kernels::probe_kernels(tc, flavour, emulate, launch_s, units, log)?;
        // The model's copy rates are those plans see: the kernel runs' copies that ran
        // alone (kernels::lone_copy_rates), where there are some; the copy test's figure
        // goes into the source beside it.
        for (field, rates, what) in [
            ("h2d_gbs", &k.lone_uploads, "uploads"),
            ("d2h_gbs", &k.lone_downloads, "downloads"),
        ] {
            let Some(rate) = kernels::median(rates) else {
                continue;
            };
            let test = values.get(field).copied().unwrap_or(0.0);
            log(&format!(
                "{field}: {:.2} GB/s, the median of {} {what} of the kernel runs that met no copy the other way \
                 (the copy test: {test:.2})",
                rate / 1e9,
                rates.len()
            ));
            values.insert(field.to_string(), (rate / 1e7).round() / 100.0);
            how.insert(
                field.to_string(),
                format!(
                    "the median of {} {what} of its kernel runs (chunks of page-locked arrays, kernels running) that \
                     met no copy the other way, from TPACE_TRACE; its copy test ({}) gave {test:.2}",
                    rates.len(),
                    FIGURES.iter().find(|(f, _)| *f == field).map_or("", |(_, w)| w)
                ),
            );
        }
        k.runs
    } else {
        Vec::new()
    };
    Ok(Probed {
        values,
        device,
        emulated: flavour == Flavour::CudaEmulation,
        bytes,
        kernels,
        how,
    })
}

/// `key=value` lines of the figures the profile knows.
pub fn parse(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| FIGURES.iter().any(|(f, _)| f == k))
        .filter_map(|(k, v)| v.trim().parse().ok().map(|v| (k.to_string(), v)))
        .collect()
}

fn device_name() -> String {
    Command::new("nvidia-smi")
        .args(["--query-gpu=name", "--format=csv,noheader"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(|l| l.trim().to_string()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "an unnamed CUDA device".into())
}

/// The profile file for `name`, measured on `date` (YYYY-MM-DD). Figures the run
/// could not measure (zero, or absent) are left out, as the schema allows.
pub fn profile_toml(name: &str, probed: &Probed, date: &str) -> String {
    let mut out = format!(
        "# Measured by `tpace probe` on {date} on {device}, copies of {bytes} bytes,\n\
         # best of 5 runs after a warm-up. Schema: src/model/profile.rs, profiles/README.md.\n\n\
         name = \"{name}\"\n\
         description = \"{device}, probed {date}\"\n\
         arch = \"gpu\"\n",
        device = probed.device,
        bytes = probed.bytes,
    );
    // A program on a device of this name plans with the profile, where it is bundled.
    if !probed.emulated && probed.device.chars().any(|c| c.is_ascii_alphanumeric()) {
        out.push_str(&format!(
            "device = \"{}\"\n",
            probed.device.replace(['"', '\\'], "")
        ));
    }
    for (field, _) in FIGURES {
        if let Some(table) = figure_table(field, probed, date) {
            out.push('\n');
            out.push_str(&table);
        }
    }
    out.push_str(&kernels_toml(probed, date));
    out
}

/// `[field]` with its value, kind and source, if the run measured it.
fn figure_table(field: &str, probed: &Probed, date: &str) -> Option<String> {
    let what = FIGURES.iter().find(|(f, _)| *f == field)?.1;
    let what = probed.how.get(field).map_or(what, String::as_str);
    let v = probed.values.get(field).filter(|v| **v > 0.0)?;
    // Whole numbers (counts, bytes) as TOML integers, which load as the same number.
    let value = if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        v.to_string()
    };
    Some(format!(
        "[{field}]\nvalue = {value}\nkind = \"measured\"\nsource = \"tpace probe on {device}, {date}: {what}\"\n",
        device = probed.device,
    ))
}

/// How the line that `--into` puts at the top of a profile starts.
pub const REFRESHED_MARK: &str = "# Refreshed by `tpace probe --into`";

/// The line that starts the kernels' part of a profile: `--into` replaces
/// everything from it to the end of the file.
pub const KERNELS_MARK: &str = "# ---- [[kernels]]: written by `tpace probe`";

/// The `[[kernels]]` entries of a run, after [`KERNELS_MARK`] (empty when none).
fn kernels_toml(probed: &Probed, date: &str) -> String {
    if probed.kernels.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n{KERNELS_MARK} on {date}; the model prices a pipeline's kernels by the entry of\n\
         # its element type, shape class (rank and widest halo) and steps per kernel: `ps` per grid\n\
         # point and step, measured on chunks of `rows` planes, scaled by its bytes per point over `bytes`\n\
         # (at one step a kernel only the memory part: `bytes` at the device copy rate; the rest once).\n"
    );
    for k in &probed.kernels {
        // What fused launches aimed at and what their segments and launches cost, where known.
        let mut launches = if k.blocks > 0 {
            format!("blocks = {}\n", k.blocks)
        } else {
            String::new()
        };
        if let Some(s) = k.segment_rows {
            launches.push_str(&format!("segment_rows = {s:.1}\n"));
        }
        if let Some(l) = k.launch_rows {
            launches.push_str(&format!("launch_rows = {l:.1}\n"));
        }
        out.push_str(&format!(
            "\n[[kernels]]\nelem = \"{}\"\nshape = \"{}\"\nfuse = {}\nps = {:.4}\nbytes = {:.1}\nrows = {}\n{launches}\
             kind = \"measured\"\nsource = \"tpace probe on {}, {date}: {}\"\n",
            k.elem, k.shape, k.fuse, k.ps, k.bytes, k.rows, probed.device, k.what
        ));
    }
    out
}

/// An existing profile's text with what `probed` measured put in: every figure it
/// measured replaces that table's value, kind and source (or is added at the end),
/// the `[[kernels]]` part after [`KERNELS_MARK`] is replaced by the run's; name,
/// description, comments and every other figure stay as they are.
pub fn update_profile(text: &str, probed: &Probed, date: &str) -> String {
    // The kernels' part goes where the run has new ones (`--no-kernels` keeps it).
    let (kept, old_kernels) = match text.find(KERNELS_MARK) {
        Some(at) if !probed.kernels.is_empty() => (text[..at].trim_end().to_string() + "\n", ""),
        Some(at) => (text[..at].trim_end().to_string() + "\n", &text[at..]),
        None => (text.to_string(), ""),
    };
    // One line at the top says when; an earlier refresh's line goes.
    let mut body = format!(
        "{REFRESHED_MARK} on {date} on {}: every figure whose source says `tpace probe`,\n\
         # and the [[kernels]] table; the other figures and the comments are as they were.\n",
        probed.device
    );
    let mut lines = kept.lines().peekable();
    if lines.peek().is_some_and(|l| l.starts_with(REFRESHED_MARK)) {
        lines.next();
        lines.next();
    }
    for l in lines {
        body.push_str(l);
        body.push('\n');
    }
    for (field, _) in FIGURES {
        let Some(table) = figure_table(field, probed, date) else {
            continue;
        };
        let lines: Vec<&str> = body.lines().collect();
        let header = format!("[{field}]");
        match lines.iter().position(|l| l.trim() == header) {
            Some(at) => {
                // The table runs to the next blank line, comment or table.
                let end = lines[at + 1..]
                    .iter()
                    .position(|l| {
                        let l = l.trim();
                        l.is_empty() || l.starts_with('#') || l.starts_with('[')
                    })
                    .map_or(lines.len(), |e| at + 1 + e);
                let mut out: Vec<String> = lines[..at].iter().map(|l| l.to_string()).collect();
                out.extend(table.lines().map(str::to_string));
                out.extend(lines[end..].iter().map(|l| l.to_string()));
                body = out.join("\n") + "\n";
            }
            None => {
                body = body.trim_end().to_string() + "\n\n" + &table;
            }
        }
    }
    if old_kernels.is_empty() {
        body + &kernels_toml(probed, date)
    } else {
        body + "\n" + old_kernels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_from_probe_output_loads() {
        let values = parse(
            "bytes=1000\nmemory_gbs=2870.5\nh2d_gbs=49.5\nmemory_gb=0.00\ncompute_units=132\nnoise\n",
        );
        assert_eq!(values.len(), 4);
        let probed = Probed {
            values,
            device: "NVIDIA H100".into(),
            emulated: false,
            bytes: 1000,
            kernels: Vec::new(),
            how: [(
                "h2d_gbs".to_string(),
                "the kernel runs' lone uploads".to_string(),
            )]
            .into(),
        };
        let text = profile_toml("here", &probed, "2026-11-23");
        // A figure measured otherwise says how in its source.
        assert!(
            text.contains("2026-11-23: the kernel runs' lone uploads"),
            "{text}"
        );
        let p = crate::model::Profile::parse("probe", &text).expect("a valid profile");
        assert_eq!(p.memory_gbs.unwrap().value, 2870.5);
        assert_eq!(p.compute_units.unwrap().value, 132.0);
        // Zero means unknown and is left out.
        assert!(p.memory_gb.is_none());
        assert!(text.contains("kind = \"measured\""));
    }

    fn run(ps: f64) -> kernels::KernelRun {
        kernels::KernelRun {
            elem: "float".into(),
            shape: "2d-r1".into(),
            fuse: 4,
            ps,
            bytes: 8.0,
            rows: 1536,
            blocks: 528,
            segment_rows: Some(26.5),
            launch_rows: None,
            what: "the test's program".into(),
        }
    }

    /// `--into`: the measured figures and the kernels replaced in place, everything
    /// else (name, comments, figures the probe does not measure) kept; a second
    /// refresh replaces the first one's kernels and header instead of adding to them.
    #[test]
    fn a_refresh_replaces_what_was_measured_and_keeps_the_rest() {
        let old = include_str!("../../profiles/k40c.toml");
        let probed = |ps: f64, kernels: bool| Probed {
            values: parse("h2d_gbs=12.5\nlaunch_overhead_us=5.5\n"),
            device: "Tesla K40c".into(),
            emulated: false,
            bytes: 1000,
            kernels: if kernels { vec![run(ps)] } else { Vec::new() },
            how: BTreeMap::new(),
        };
        let once = update_profile(old, &probed(3.5, true), "2026-11-25");
        let twice = update_profile(&once, &probed(2.5, true), "2026-11-26");
        let before = crate::model::Profile::parse("old", old).unwrap();
        for text in [&once, &twice] {
            let p = crate::model::Profile::parse("refreshed", text).expect("loads");
            assert_eq!(p.name, "k40c");
            assert_eq!(p.h2d_gbs.as_ref().unwrap().value, 12.5);
            assert!(
                p.h2d_gbs
                    .as_ref()
                    .unwrap()
                    .source
                    .contains("tpace probe on Tesla K40c")
            );
            // Added where the file had none.
            assert_eq!(p.launch_overhead_us.as_ref().unwrap().value, 5.5);
            // Kept: what the probe did not measure.
            assert_eq!(p.memory_gbs, before.memory_gbs);
            assert_eq!(p.stencil_gbs, before.stencil_gbs);
            assert_eq!(p.kernels.len(), 1);
            assert_eq!(text.matches(REFRESHED_MARK).count(), 1);
            assert_eq!(text.matches(KERNELS_MARK).count(), 1);
        }
        assert!(twice.starts_with(&format!("{REFRESHED_MARK} on 2026-11-26")));
        let p = crate::model::Profile::parse("twice", &twice).unwrap();
        assert_eq!(p.kernels[0].ps, 2.5);
        // The blocks its fused launches aimed at and the costs it fitted go with the figure.
        assert_eq!(p.kernels[0].blocks, Some(528));
        assert_eq!(
            (p.kernels[0].segment_rows, p.kernels[0].launch_rows),
            (Some(26.5), None)
        );
        // A run without kernels (--no-kernels) keeps the table that is there.
        let kept = update_profile(&twice, &probed(9.0, false), "2026-11-27");
        let p = crate::model::Profile::parse("kept", &kept).unwrap();
        assert_eq!(p.kernels.len(), 1);
        assert_eq!(p.kernels[0].ps, 2.5);
    }
}
