//! `tpace plan`: evaluate the extents, choose the plan, print it.

use super::expr::Macros;
use super::predict::{Machine, Prediction, bytes};
use super::profile::{Profile, Provenance};
use super::search::{Choice, choose, choose_at};
use super::workload::{self, Movement, Workload};
use crate::plan::Unit;
use std::fmt::Write;
use std::time::Instant;

/// What `tpace plan` was asked.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// `NAME=VALUE` macro values for the extents.
    pub set: Vec<String>,
    /// Device memory cap in bytes, below the profile's memory.
    pub mem_cap: Option<u128>,
    /// Step count, when the time loop's bound is not a constant expression.
    pub steps: Option<u64>,
    /// Whether the target's kernels advance several steps each (CUDA).
    pub fuses: bool,
    /// Steps per kernel fixed by the target's own choice (OpenCL: the
    /// evolution-vector model's T); the search then does not weigh others.
    pub fuse_steps: Option<u64>,
    /// Devices the run spreads over, all ranks together (0 or 1: one).
    pub devices: u64,
    /// MPI ranks among which the devices are (0 or 1: one process).
    pub ranks: u64,
    /// Devices of one node, whose copies share its host memory (0: one process's,
    /// `devices / ranks`: each rank on a node of its own).
    pub node_devices: u64,
    /// The devices of one process copy ghost planes into each other's memory (CUDA's
    /// peer copies), whose buffers the plan leaves room for.
    pub peer: bool,
}

/// Parse a byte count: a whole number with an optional unit (`k`, `M`, `G`,
/// `T` for powers of 1000, `KiB`, `MiB`, `GiB`, `TiB` for powers of 1024; a
/// trailing `B` is allowed).
pub fn parse_bytes(text: &str) -> Result<u128, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "k" | "kB" | "K" | "KB" => 1e3,
        "M" | "MB" => 1e6,
        "G" | "GB" => 1e9,
        "T" | "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"
            ));
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a byte count"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("`{text}` is not a positive byte count"));
    }
    Ok((v * scale) as u128)
}

/// Build the workload, choose the plan and render the report.
pub fn plan_report(
    unit: Unit<'_>,
    profile: &Profile,
    request: &PlanRequest,
) -> Result<String, String> {
    let started = Instant::now();
    let machine = Machine::from_profile(profile)?;
    let macros = Macros::for_program(&request.set, unit.program)?;
    let extents = workload::extents(unit, &macros)?;
    let steps = match request.steps {
        Some(s) => s,
        None => workload::steps(unit, &macros)?,
    };
    let fusion = request
        .fuses
        .then(|| workload::fusion_on(unit, profile))
        .flatten();
    let mut w = Workload::from_unit(unit, &extents, steps)?
        .with_fusion(fusion.as_ref(), &unit.pipeline.arrays);
    // A target that chooses its steps per kernel itself (OpenCL's T): kernels of that many.
    match (request.fuse_steps, &fusion) {
        (Some(t), Some(f)) if t > 1 => {
            w.fuse = t.min(u64::from(f.max_steps.min(crate::plan::CHOSEN_MAX_STEPS)))
        }
        (Some(_), _) => w = w.with_fusion(None, &unit.pipeline.arrays),
        (None, _) => {}
    }
    let cap = match (request.mem_cap, machine.memory_bytes) {
        (Some(c), Some(m)) => Some(c.min(m as u128)),
        (c, m) => c.or(m.map(|m| m as u128)),
    };
    if request.devices > 1 {
        return devices_report(unit, profile, &machine, &w, &extents, cap, request, started);
    }
    let choice = if request.fuse_steps.is_some() {
        choose_at(&w, &machine, cap)?
    } else {
        choose(&w, &machine, cap)?
    };
    let elapsed = started.elapsed();
    let mut out = String::new();
    header(&mut out, unit, profile, &machine, &w, &extents, choice.cap);
    best(&mut out, &w, &machine, &choice.best, choice.cap);
    alternatives(&mut out, &choice);
    footer(&mut out, profile, &w, &choice, elapsed.as_secs_f64());
    Ok(out)
}

/// The plan of a run over several devices: the decomposition, the exchanges, and
/// the one-device plan every device runs on its slab and ghost planes.
#[allow(clippy::too_many_arguments)]
fn devices_report(
    unit: Unit<'_>,
    profile: &Profile,
    machine: &Machine,
    w: &Workload,
    extents: &[u64],
    cap: Option<u128>,
    request: &PlanRequest,
    started: Instant,
) -> Result<String, String> {
    let ranks = request.ranks.max(1);
    let node = match request.node_devices {
        0 => request.devices.max(1) / ranks,
        n => n,
    };
    let d = super::devices::choose_devices(
        w,
        machine,
        cap,
        request.devices,
        ranks,
        node,
        request.peer,
    )?;
    let elapsed = started.elapsed();
    let mut out = String::new();
    header(&mut out, unit, profile, machine, w, extents, d.choice.cap);
    let c = d.choice.best.config;
    let glups = if d.total_s > 0.0 {
        w.points() as f64 * w.steps as f64 / d.total_s * 1e-9
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "\n{} devices ({} rank(s)): slabs of up to {} planes; each device computes {} planes a step on average (its slab and half of the ghost planes {} steps read, its ghost region shrinking step by step)",
        d.devices, ranks, d.slab, d.planes, c.k
    );
    let _ = writeln!(
        out,
        "  predicted time     {:>12.6} s   {glups:.1} Glup/s",
        d.total_s
    );
    let _ = writeln!(
        out,
        "  exchanges          {:>12.6} s   {} block(s), one exchange before each but the first: {} between two neighbours (both ways); {} redundant point updates per boundary and block",
        d.exchange_s,
        d.blocks,
        bytes(d.exchange_bytes as f64),
        d.redundant_points
    );
    let shared = super::devices::sharing_host(machine, node.clamp(1, d.devices));
    if shared.h2d_bps < machine.h2d_bps {
        let _ = writeln!(
            out,
            "  host memory        {node} devices of a node share its {:.0} GB/s (host_memory_gbs): each device's links at {:.1} GB/s up, {:.1} GB/s down (alone {:.1}, {:.1})",
            machine.host_memory_bps / 1e9,
            shared.h2d_bps / 1e9,
            shared.d2h_bps / 1e9,
            machine.h2d_bps / 1e9,
            machine.d2h_bps / 1e9
        );
    }
    if d.ghost_bytes > 0 {
        let _ = writeln!(
            out,
            "  ghost planes       device to device between the devices of a process (peer copies), where the budget leaves {} on each device beside the plan; else through host memory",
            bytes(d.ghost_bytes as f64)
        );
    }
    if ranks > 1 {
        let _ = writeln!(
            out,
            "  results            {:>12.6} s   after the blocks, {} between ranks (rank 0 alone receives what the program only outputs, as the last block's chunks finish: only what that block leaves stays after it):",
            d.results_s,
            bytes(d.results_bytes as f64)
        );
        for (i, a) in unit.pipeline.arrays.iter().enumerate() {
            if let Some(line) = unit.plan.receivers_of(i, &a.display_name()) {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    let _ = writeln!(out, "\nevery device's plan, on its planes:");
    let slab_w = Workload {
        n: d.planes,
        ..w.clone()
    };
    best(&mut out, &slab_w, &shared, &d.choice.best, d.choice.cap);
    let _ = writeln!(
        out,
        "\nrun it with: TPACE_GPUS=<devices per process> (and mpirun -np {ranks} for ranks) TPACE_SCHEDULE={} TPACE_K={} TPACE_CHUNK={} TPACE_STREAMS={}",
        c.schedule.name(),
        c.k,
        c.b,
        c.streams
    );
    let _ = writeln!(
        out,
        "model: {} plans predicted per k, in {:.2} ms",
        d.choice.considered,
        elapsed.as_secs_f64() * 1e3
    );
    Ok(out)
}

fn header(
    out: &mut String,
    unit: Unit<'_>,
    profile: &Profile,
    m: &Machine,
    w: &Workload,
    extents: &[u64],
    cap: Option<u128>,
) {
    let p = &unit.pipeline;
    let grid: Vec<String> = extents.iter().map(u64::to_string).collect();
    let _ = writeln!(
        out,
        "{}: plan for {} ({})",
        p.location, profile.name, profile.description
    );
    let _ = writeln!(
        out,
        "  grid {}, cut along dim({}) into {} planes of {} elements; {} steps",
        grid.join(" x "),
        p.grid.rank(),
        w.n,
        w.plane,
        w.steps
    );
    let arrays: Vec<String> = w
        .arrays
        .iter()
        .map(|a| {
            let how = match (a.movement, a.unread) {
                (Movement::InOut, false) => "in+out",
                (Movement::InOut, true) => "in+out, not out after the last step",
                (Movement::In, _) => "in",
                (Movement::Temporary, false) => "temporary",
                (Movement::Temporary, true) => "temporary, never moved",
                (Movement::Folded, false) => "folded into the swap's other buffer, out once",
                (Movement::Folded, true) => "folded into the swap's other buffer, never moved",
                (Movement::Unused, _) => "unused",
            };
            format!("{} ({} B, {how})", a.name, a.elem_bytes)
        })
        .collect();
    let _ = writeln!(out, "  arrays {}", arrays.join(", "));
    for (i, a) in p.arrays.iter().enumerate() {
        if let Some(line) = unit.plan.unread_of(i, &a.display_name()) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(
        out,
        "  per point and step: {} flops, {} bytes, {} kernel(s); halo along the cut axis {} below, {} above; mmtb skew {}",
        w.flops_per_point, w.bytes_per_point, w.kernels_per_step, w.h_lo, w.h_hi, w.skew
    );
    if w.fuse > 1 {
        let _ = writeln!(
            out,
            "  fused kernels: {} steps each (two-level blocking), computing {:.3} points per point kept",
            w.fuse, w.fuse_overhead[w.fuse as usize]
        );
        let unpriced: Vec<String> = (2..=w.fuse_max)
            .filter(|d| !m.depth_priced(w, *d))
            .map(|d| d.to_string())
            .collect();
        if !unpriced.is_empty() {
            let why = if m.measured_class(w) {
                format!(
                    "the profile has no [[kernels]] entry for {} {} at that depth",
                    w.elem, w.shape
                )
            } else {
                "a block alone on its multiprocessor, which the bandwidth figures do not price"
                    .to_string()
            };
            let _ = writeln!(
                out,
                "  not searched: {} steps per kernel ({why}; `tpace probe` times every depth)",
                unpriced.join(", ")
            );
        }
    }
    let _ = writeln!(
        out,
        "  device memory cap {}",
        cap.map_or("unknown (no limit applied)".to_string(), |c| bytes(
            c as f64
        ))
    );
}

fn best(out: &mut String, w: &Workload, m: &Machine, p: &Prediction, cap: Option<u128>) {
    let c = p.config;
    let _ = writeln!(
        out,
        "\nbest plan: {} k={} b={} streams={}{} ({} chunk(s), {} block(s) of up to k steps)",
        c.schedule.name(),
        c.k,
        c.b,
        c.streams,
        if w.fuse > 1 || p.fuse > 1 {
            format!(" fuse={}", p.fuse)
        } else {
            String::new()
        },
        p.chunks,
        p.blocks
    );
    let glups = if p.total_s > 0.0 {
        w.points() as f64 * w.steps as f64 / p.total_s * 1e-9
    } else {
        0.0
    };
    let line = |out: &mut String, what: &str, s: f64, detail: String| {
        let _ = writeln!(out, "  {what:<18} {s:>12.6} s   {detail}");
    };
    line(
        out,
        "predicted time",
        p.total_s,
        format!("{glups:.1} Glup/s"),
    );
    line(out, "host-to-device", p.h2d_s, bytes(p.h2d_bytes as f64));
    line(out, "device-to-host", p.d2h_s, bytes(p.d2h_bytes as f64));
    let redundant = if p.points > 0 {
        100.0 * p.redundant_points as f64 / p.points as f64
    } else {
        0.0
    };
    line(
        out,
        "kernels",
        p.kernel_s,
        format!(
            "{} point updates, {} redundant ({redundant:.2} %)",
            p.points, p.redundant_points
        ),
    );
    line(
        out,
        "launches",
        p.launch_s,
        format!("{} x {:.1} us", p.launches, m.launch_s * 1e6),
    );
    line(
        out,
        "device-to-device",
        p.d2d_s,
        format!("{} (hand-over / carry)", bytes(p.d2d_bytes as f64)),
    );
    line(
        out,
        "hidden by overlap",
        p.overlap_s(),
        format!("of {:.6} s serial", p.serial_s()),
    );
    let _ = writeln!(
        out,
        "  {:<18} {:>12}     {}",
        "device memory",
        bytes(p.device_bytes as f64),
        cap.map_or(String::new(), |c| format!("of {}", bytes(c as f64)))
    );
    let _ = writeln!(out, "  kernel cost        {}", kernel_cost(w, m, p));
    if let Some(text) = streams_line(w, m, p, cap) {
        let _ = writeln!(out, "  streams            {text}");
    }
}

/// Where the model's kernel time comes from: the profile's measured entry for the
/// pipeline's element type, shape class and steps per kernel, or the bandwidth figures.
fn kernel_cost(w: &Workload, m: &Machine, p: &Prediction) -> String {
    let fuse = p.fuse.max(1);
    let class = format!("{} {}, {} step(s) per kernel", w.elem, w.shape, fuse);
    match m.kernel_figure(w, fuse) {
        Some(f) => format!(
            "measured ([[kernels]]): {class}, {:.3} ps per point and step ({:.3} on {}-plane chunks, \
             scaled to {} of {} bytes per point and to b = {})",
            m.measured_point_cost(w, f, fuse, p.config.b) * 1e12,
            f.ps,
            f.rows,
            w.bytes_per_point,
            f.bytes,
            p.config.b
        ),
        None => format!(
            "from the bandwidth figures (stencil_gbs, fused_point_ps): the profile has no \
             [[kernels]] entry for {class}"
        ),
    }
}

/// The best plan's k and b with 1 to 4 streams, and what bounds a chunk's steady
/// state: what another stream buys (None for in-core, which runs one).
fn streams_line(w: &Workload, m: &Machine, p: &Prediction, cap: Option<u128>) -> Option<String> {
    if p.config.schedule == super::predict::Schedule::Incore {
        return None;
    }
    // The plan's own steps per kernel (the search may have picked another depth).
    let w = &Workload {
        fuse: p.fuse.max(1),
        ..w.clone()
    };
    let all = super::predict::predict_streams(w, m, p.config, &[1, 2, 3, 4]).ok()?;
    // The line must agree with the plan it explains.
    debug_assert!(all.iter().any(|q| q.total_s == p.total_s));
    // mmtb runs two queues at one stream: its S=1 is its S=2.
    let two_at_least = p.config.schedule == super::predict::Schedule::Mmtb && p.chunks > 1;
    let times: Vec<String> = all
        .iter()
        .filter(|q| !(two_at_least && q.config.streams == 1))
        .map(|q| {
            let fits = cap.is_none_or(|c| q.device_bytes <= c);
            format!(
                "S={} {:.6} s{}",
                q.config.streams,
                q.total_s,
                if fits { "" } else { " (too big)" }
            )
        })
        .collect();
    // Per chunk of a block, as the pipeline sees it: the copies as they run (stretched
    // where they must meet on the link, predict::steady).
    let per = (p.chunks * p.blocks.max(1)) as f64;
    let k = p.device_s() / per;
    let kb = p.config.k.min(w.steps.max(1));
    let out_first = super::predict::out_first(w, p.config, p.chunks, kb);
    let st = super::predict::steady(
        m,
        p.slots.max(2),
        p.h2d_bytes as f64 / per,
        k,
        p.d2h_bytes as f64 / per,
        out_first,
    );
    let (u, d) = (st.upload_s, st.download_s);
    let link = m
        .duplex_bps
        .map_or(0.0, |b| (p.h2d_bytes + p.d2h_bytes) as f64 / b / per);
    let round =
        ((u + k + out_first * d) / p.slots.max(1) as f64).max((k + d) / p.slots.max(1) as f64);
    let bound = [
        (k, "kernels"),
        (u, "uploads"),
        (d, "downloads"),
        (link, "the link both ways"),
        (
            round,
            "the round trip of a queue (another stream would shorten it)",
        ),
    ]
    .into_iter()
    .fold((0.0, "kernels"), |a, b| if b.0 > a.0 { b } else { a })
    .1;
    // Other stream counts that fit, predicted within the tie, gave way to this plan:
    // fewer ones to its slack, or more ones where slack does not pay.
    let gave_way: Vec<String> = all
        .iter()
        .filter(|q| {
            q.config.streams != p.config.streams
                && !(two_at_least && q.config.streams == 1)
                && cap.is_none_or(|c| q.device_bytes <= c)
                && super::search::gives_way(q, std::slice::from_ref(p))
        })
        .map(|q| format!("S={}", q.config.streams))
        .collect();
    let why = if super::search::slack_pays(p) {
        "taken for its slack (copies that run long)"
    } else if p.h2d_s.max(p.d2h_s) < p.device_s() {
        "taken: the copies fit in the kernels' time, where more queues only put more copies on the link at once"
    } else {
        "taken: the link sets the pace, where more queues only put more copies on it at once"
    };
    let bound = if gave_way.is_empty() {
        bound.to_string()
    } else {
        format!(
            "{bound}; {} predicted as fast or within {:.0} %, S={} {why}",
            gave_way.join(", "),
            super::search::SLACK_TIE * 100.0,
            p.config.streams
        )
    };
    let bound = if p.slots <= 1 {
        "one queue: nothing overlaps".to_string()
    } else {
        bound
    };
    Some(format!(
        "{} (same k and b); a chunk's steady share is bound by {bound}",
        times.join(", ")
    ))
}

fn alternatives(out: &mut String, choice: &Choice) {
    let _ = writeln!(out, "\nnext best:");
    let _ = writeln!(
        out,
        "  {:<8} {:>6} {:>9} {:>7} {:>12} {:>10} {:>10} {:>10} {:>11}",
        "schedule", "k", "b", "streams", "total s", "h2d s", "d2h s", "kernel s", "memory"
    );
    for p in &choice.alternatives {
        let c = p.config;
        let _ = writeln!(
            out,
            "  {:<8} {:>6} {:>9} {:>7} {:>12.6} {:>10.4} {:>10.4} {:>10.4} {:>11}",
            c.schedule.name(),
            c.k,
            c.b,
            c.streams,
            p.total_s,
            p.h2d_s,
            p.d2h_s,
            p.kernel_s,
            bytes(p.device_bytes as f64)
        );
    }
}

fn footer(out: &mut String, profile: &Profile, w: &Workload, choice: &Choice, seconds: f64) {
    let c = choice.best.config;
    // With all four set the program asks the model nothing: a step count per kernel
    // other than the program's default must be set too.
    let fuse = if w.fuse > 1 && choice.best.fuse != w.fuse {
        format!(" TPACE_FUSE={}", choice.best.fuse)
    } else {
        String::new()
    };
    let known = crate::plan::Schedule::ALL
        .iter()
        .any(|s| s.name() == c.schedule.name());
    let _ = writeln!(out);
    if known {
        let _ = writeln!(
            out,
            "run it with: TPACE_SCHEDULE={} TPACE_K={} TPACE_CHUNK={} TPACE_STREAMS={}{fuse}",
            c.schedule.name(),
            c.k,
            c.b,
            c.streams
        );
    } else {
        let _ = writeln!(
            out,
            "note: generated programs do not run the {} schedule yet",
            c.schedule.name()
        );
    }
    // Figures nobody measured on the machine: a reader should know the plan rests on them.
    for (field, f) in profile.figures() {
        if matches!(
            f.kind,
            Provenance::Assumed | Provenance::Spec | Provenance::Derived
        ) {
            let _ = writeln!(
                out,
                "note: {field} = {} ({}): {}",
                f.value,
                f.kind.name(),
                f.source
            );
        }
    }
    let _ = writeln!(
        out,
        "model: {} plans predicted, {} too big for the cap, in {:.2} ms",
        choice.considered,
        choice.too_big,
        seconds * 1e3
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::compile_source;

    #[test]
    fn byte_counts_with_units() {
        assert_eq!(parse_bytes("1000").unwrap(), 1000);
        assert_eq!(parse_bytes("4GB").unwrap(), 4_000_000_000);
        assert_eq!(parse_bytes("4 G").unwrap(), 4_000_000_000);
        assert_eq!(parse_bytes("1.5MiB").unwrap(), 1_572_864);
        assert!(parse_bytes("4 parsecs").unwrap_err().contains("unit"));
        assert!(parse_bytes("-3").is_err());
        assert!(parse_bytes("0").is_err());
    }

    #[test]
    fn report_for_an_out_of_core_jacobi() {
        let src = include_str!("../../examples/jacobi2d.c");
        let c = compile_source("jacobi2d.c", src).unwrap();
        let req = PlanRequest {
            set: vec!["X=48000".into(), "Y=48000".into()],
            mem_cap: Some(8_000_000_000),
            steps: Some(2048),
            fuses: false,
            ..PlanRequest::default()
        };
        let text = plan_report(c.unit(0), &Profile::bundled("h100").unwrap(), &req).unwrap();
        assert!(text.contains("grid 48000 x 48000"), "{text}");
        assert!(text.contains("best plan: mmtb"), "{text}");
        assert!(text.contains("device memory cap 8.00 GB"), "{text}");
        assert!(text.contains("note: exchange_gbs = 25 (assumed)"), "{text}");
        assert!(text.contains("next best:"), "{text}");
        // Unfused (no fusion asked for): the probe's one-step Jacobi kernel prices it.
        assert!(
            text.contains(
                "kernel cost        measured ([[kernels]]): float 2d-r1, 1 step(s) per kernel"
            ),
            "{text}"
        );
        assert!(text.contains("  streams            S=2 "), "{text}");
        // Fused (CUDA): the streams line is of the plan's own depth, whichever the
        // search picked, so one of its times is the plan's.
        let fused = plan_report(
            c.unit(0),
            &Profile::bundled("h100").unwrap(),
            &PlanRequest {
                fuses: true,
                ..req.clone()
            },
        )
        .unwrap();
        let time = |line: &str| {
            fused
                .lines()
                .find(|l| l.trim_start().starts_with(line))
                .unwrap_or_else(|| panic!("no {line} line:\n{fused}"))
                .to_string()
        };
        let predicted = time("predicted time");
        let seconds = predicted.split_whitespace().nth(2).unwrap();
        assert!(
            time("streams").contains(&format!(" {seconds} s")),
            "{fused}"
        );
    }

    #[test]
    fn errors_name_what_is_missing() {
        let src = include_str!("../../examples/heat3d.c");
        let c = compile_source("heat3d.c", src).unwrap();
        let h100 = Profile::bundled("h100").unwrap();
        let e = plan_report(c.unit(0), &h100, &PlanRequest::default()).unwrap_err();
        assert!(e.contains("--steps"), "{e}");
        let e = plan_report(
            c.unit(0),
            &Profile::bundled("xeon-phi-5110p").unwrap(),
            &PlanRequest::default(),
        )
        .unwrap_err();
        assert!(e.contains("h2d_gbs"), "{e}");
    }
}
