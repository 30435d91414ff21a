//! The model's figures as C constants for the model part of the runtime
//! (`src/runtime/model.h`), so that a generated program searches for its
//! plan at start-up exactly as [`super::search::choose`] does.

use super::predict::Machine;
use super::profile::Profile;
use super::workload::{ArrayLoad, Workload};
use crate::plan::Unit;

/// The machine profile generated programs are planned for when none is given:
/// the one `tpace plan` and `tpace tune` default to.
pub const DEFAULT_MACHINE: &str = "h100";

/// A C string literal for `text`: printable ASCII kept, `"` and `\` escaped, the rest `?`.
fn c_string(text: &str) -> String {
    let mut out = String::from("\"");
    for ch in text.chars() {
        match ch {
            '"' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            ' '..='~' => out.push(ch),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}

/// A double literal that reads back as the same number (Rust's shortest round trip).
fn c_double(x: f64) -> String {
    let text = format!("{x:?}");
    if text.contains(['.', 'e']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// Bytes per grid element summed over the arrays that `pick` selects.
fn elem_bytes(w: &Workload, pick: impl Fn(&ArrayLoad) -> bool) -> u64 {
    w.arrays
        .iter()
        .filter(|a| pick(a))
        .map(|a| a.elem_bytes)
        .sum()
}

/// The C initializer of a `tpace_model` for the extent-free part of `w` on `m`
/// (the extents and the step count are the run's own), one commented field a line.
pub fn initializer(w: &Workload, m: &Machine) -> String {
    let fields: [(String, &str); 18] = [
        (c_string(&m.name), "machine profile"),
        (c_double(m.memory_bps), "device copy bandwidth, bytes/s"),
        (
            c_double(m.kernel_bps),
            "bandwidth stencil kernels reach, bytes/s",
        ),
        (c_double(m.h2d_bps), "host-to-device, bytes/s"),
        (c_double(m.d2h_bps), "device-to-host, bytes/s"),
        (
            c_double(m.duplex_bps.unwrap_or(0.0)),
            "both directions together, bytes/s (0: unknown)",
        ),
        (
            c_double(m.peak_flops.unwrap_or(0.0)),
            "peak flop/s (0: unknown)",
        ),
        (c_double(m.launch_s), "seconds per kernel launch"),
        (
            c_double(m.memory_bytes.unwrap_or(0.0)),
            "device memory, bytes (0: unknown)",
        ),
        (format!("{}ULL", w.h_lo), "planes a step reads below"),
        (format!("{}ULL", w.h_hi), "planes a step reads above"),
        (format!("{}ULL", w.skew), "mmtb: window shift per step"),
        (format!("{}ULL", w.handover_below), "mmtb: hand-over below"),
        (format!("{}ULL", w.upload_above), "mmtb: upload above"),
        (format!("{}ULL", w.kernels_per_step), "kernels per step"),
        (
            format!("{}ULL", w.extra_bytes_per_point),
            "swap: second buffer, bytes per point",
        ),
        (c_double(w.flops_per_point), "flops per point and step"),
        (
            c_double(w.bytes_per_point),
            "device bytes per point and step",
        ),
    ];
    let mut out = String::from("{\n");
    for (value, what) in &fields {
        out.push_str(&format!("    {value}, /* {what} */\n"));
    }
    let pair = |f: &dyn Fn(bool) -> u64| format!("{{{}ULL, {}ULL}}", f(false), f(true));
    out.push_str(&format!(
        "    {}, /* bytes per element moved in, [last block] */\n",
        pair(&|last| elem_bytes(w, |a| a.moves_in(last)))
    ));
    out.push_str(&format!(
        "    {}, /* bytes per element moved out, [last block] */\n",
        pair(&|last| elem_bytes(w, |a| a.moves_out(last)))
    ));
    out.push_str(&format!(
        "    {}ULL, /* bytes per element on the device */\n",
        elem_bytes(w, |a| a.movement.on_device())
    ));
    out.push_str(&format!(
        "    {}ULL, /* steps one kernel advances */\n",
        w.fuse
    ));
    out.push_str(&format!(
        "    {}ULL, /* most steps the fused kernels advance */\n",
        w.fuse_max
    ));
    let overheads: Vec<String> = w.fuse_overhead.iter().map(|o| c_double(*o)).collect();
    out.push_str(&format!(
        "    {{{}}}, /* fused kernels: points computed per point kept, per step count */\n",
        overheads.join(", ")
    ));
    out.push_str(&format!(
        "    {}ULL, /* fused array: bytes per element of its strips */\n",
        w.strip_elem_bytes
    ));
    let keep: Vec<String> = w.fuse_keep.iter().map(|k| format!("{k}ULL")).collect();
    out.push_str(&format!(
        "    {{{}}}, /* fused kernels: elements of a row a block keeps, per step count */\n",
        keep.join(", ")
    ));
    let wave: Vec<String> = (0..w.fuse_keep.len() as u64)
        .map(|t| format!("{}ULL", if t < 2 { 0 } else { m.fuse_wave(w, t) }))
        .collect();
    out.push_str(&format!(
        "    {{{}}}, /* fused kernels: blocks a launch aims at (one wave), per step count */\n",
        wave.join(", ")
    ));
    out.push_str(&format!(
        "    {}, /* fused kernels: seconds per point and step computed (0: no floor) */\n",
        c_double(m.fused_point_s)
    ));
    out.push_str(&format!(
        "    {}, /* several devices: ghost planes exchanged per second (0: free) */\n",
        c_double(m.exchange_bps)
    ));
    out.push_str(&format!(
        "    {}, /* several devices: seconds of one exchange's fixed cost */\n",
        c_double(m.exchange_latency_s)
    ));
    out.push_str(&format!(
        "    {}, /* several devices of one node: their copies together, bytes/s (0: unknown) */\n",
        c_double(m.host_memory_bps)
    ));
    // The profile's measured kernel times for this pipeline's element type and shape
    // class, per steps per kernel (index 1: one step): seconds per point and step,
    // scaled to its bytes per point and kernels (predict.rs `scaled_figure_seconds`), and the rows.
    let depths = w.fuse_overhead.len();
    let figure = |d: usize| m.kernel_figure(w, d as u64).filter(|_| d >= 1);
    let seconds: Vec<String> = (0..depths)
        .map(|d| {
            c_double(figure(d).map_or(0.0, |f| {
                super::predict::scaled_figure_seconds(
                    f,
                    w.bytes_per_point,
                    w.kernels_per_step,
                    d as u64,
                    m.memory_bps,
                )
            }))
        })
        .collect();
    let rows: Vec<String> = (0..depths)
        .map(|d| format!("{}ULL", figure(d).map_or(0, |f| f.rows)))
        .collect();
    out.push_str(&format!(
        "    {{{}}}, /* measured seconds per point and step, per steps per kernel (0: none) */\n",
        seconds.join(", ")
    ));
    out.push_str(&format!(
        "    {{{}}}, /* ... and the chunk width each was measured on */\n",
        rows.join(", ")
    ));
    let blocks: Vec<String> = (0..depths)
        .map(|d| {
            let b = figure(d).map_or(0, super::predict::measured_blocks);
            format!("{b}ULL")
        })
        .collect();
    out.push_str(&format!(
        "    {{{}}}, /* ... the blocks its launches aimed at */\n",
        blocks.join(", ")
    ));
    let segment: Vec<String> = (0..depths)
        .map(|d| c_double(figure(d).and_then(|f| f.segment_rows).unwrap_or(-1.0)))
        .collect();
    out.push_str(&format!(
        "    {{{}}}, /* ... rows a segment cost beyond its own (< 0: not measured) */\n",
        segment.join(", ")
    ));
    let launch: Vec<String> = (0..depths)
        .map(|d| c_double(figure(d).and_then(|f| f.launch_rows).unwrap_or(0.0)))
        .collect();
    out.push_str(&format!(
        "    {{{}}}, /* ... rows a launch cost beyond its segments' */\n",
        launch.join(", ")
    ));
    // What the machine figures above come from on the program's side, so that the
    // program derives them for the profile of the device it runs on (tpace_model_on).
    out.push_str(&format!(
        "    {}, /* element type its [[kernels]] entries are keyed by */\n",
        c_string(&w.elem)
    ));
    out.push_str(&format!(
        "    {}, /* ... and its shape class */\n",
        c_string(&w.shape)
    ));
    let per_sm: Vec<String> = (0..w.fuse_keep.len())
        .map(|t| format!("{}ULL", w.fuse_blocks_per_sm.get(t).copied().unwrap_or(0)))
        .collect();
    out.push_str(&format!(
        "    {{{}}}, /* fused kernels: blocks a multiprocessor holds, per step count */\n",
        per_sm.join(", ")
    ));
    out.push_str("    0ULL, /* steps per kernel the run measured itself: none yet */\n");
    out.push_str("    0ULL, /* steps per kernel a search may take: any */\n");
    let measured: u64 = (1..depths)
        .filter(|d| figure(*d).is_some())
        .fold(0, |bits, d| bits | 1 << d);
    out.push_str(&format!(
        "    {measured:#x}ULL /* steps per kernel the profile measured (bit d; Machine::depth_priced) */\n}}"
    ));
    out
}

/// The bundled profiles a generated program may plan with at run time: those that
/// name their device (`device`) and have the figures the out-of-core model needs.
pub fn runtime_profiles() -> Vec<Profile> {
    super::profile::bundled_names()
        .into_iter()
        .filter_map(Profile::bundled)
        .filter(|p| p.device.is_some() && Machine::from_profile(p).is_ok())
        .collect()
}

/// The C initializer of a `tpace_machine` (runtime/model.h) for `p`, whose kernel
/// table is the array `kernels` (`NULL` where it has none): the figures of
/// [`Machine::from_profile`], as the generated program's model takes them.
pub fn machine_initializer(p: &Profile, kernels: &str) -> Result<String, String> {
    let m = Machine::from_profile(p)?;
    let device = p.device.as_deref().map_or("NULL".to_string(), c_string);
    let fields: [(String, &str); 18] = [
        (c_string(&m.name), "profile"),
        (device, "the device it describes"),
        (c_double(m.memory_bps), "device copy bandwidth, bytes/s"),
        (
            c_double(m.kernel_bps),
            "bandwidth stencil kernels reach, bytes/s",
        ),
        (c_double(m.h2d_bps), "host-to-device, bytes/s"),
        (c_double(m.d2h_bps), "device-to-host, bytes/s"),
        (
            c_double(m.duplex_bps.unwrap_or(0.0)),
            "both ways, bytes/s (0: unknown)",
        ),
        (
            c_double(m.peak_flops.unwrap_or(0.0)),
            "peak flop/s (0: unknown)",
        ),
        (c_double(m.launch_s), "seconds per kernel launch"),
        (
            c_double(m.memory_bytes.unwrap_or(0.0)),
            "device memory, bytes (0: unknown)",
        ),
        (
            c_double(m.fused_point_s),
            "fused kernels: seconds per point and step (0: no floor)",
        ),
        (
            c_double(m.exchange_bps),
            "ghost planes between devices, bytes/s",
        ),
        (
            c_double(m.exchange_latency_s),
            "seconds of one exchange's fixed cost",
        ),
        (
            c_double(m.host_memory_bps),
            "a node's devices' copies together, bytes/s (0: unknown)",
        ),
        (format!("{}ULL", m.units), "multiprocessors (0: unknown)"),
        (m.kernels.len().to_string(), "measured kernel times"),
        (kernels.to_string(), "... the table"),
        (
            opencl_figures(p),
            "OpenCL's work groups and T (the evolution-vector model's figures)",
        ),
    ];
    let mut out = String::from("{\n");
    for (value, what) in &fields {
        out.push_str(&format!("        {value}, /* {what} */\n"));
    }
    out.push_str("    }");
    Ok(out)
}

/// The `tpace_cl_figures` initializer of a profile (runtime/model.h): the figures
/// the evolution-vector model chooses OpenCL's work groups and T with
/// ([`super::evolution::EvolutionMachine`]), `{0}` where the profile lacks them.
fn opencl_figures(p: &Profile) -> String {
    let Ok(m) = super::evolution::EvolutionMachine::from_profile(p) else {
        return "{0, 0, 0.0, 0ULL, 0ULL, 0ULL, 0.0, 0.0}".into();
    };
    format!(
        "{{1, {}, {}, {}ULL, {}ULL, {}ULL, {}, {}}}",
        i32::from(m.arch == super::profile::Arch::XeonPhi),
        c_double(m.bytes_per_flop),
        m.tile_bytes,
        m.min_groups,
        m.max_group_size.unwrap_or(0),
        c_double(m.priced_stream_bps()),
        c_double(m.tile_point_s.unwrap_or(0.0)),
    )
}

/// The C definitions of the machine profiles a generated program carries
/// ([`runtime_profiles`]): each one's `[[kernels]]` table and the array
/// `tpace_machines` with its count `tpace_machine_count`. The program plans with
/// the one whose `device` pattern its device's name matches (runtime/schedule.h).
pub fn machines_table() -> String {
    let profiles = runtime_profiles();
    let mut out = String::from(
        "/* ==== tpace: the bundled machine profiles (those of profiles/ that name their device): a pipeline \
         plans with the one whose device pattern the device's name matches, else with the profile it \
         was translated for; TPACE_MACHINE=FILE.toml names another ==== */\n",
    );
    let mut entries = Vec::new();
    for p in &profiles {
        let ident: String = p
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let table = if p.kernels.is_empty() {
            "NULL".to_string()
        } else {
            let name = format!("tpace_machine_{ident}_kernels");
            out.push_str(&format!(
                "static const tpace_kernel_figure {name}[] = {{ /* elem, shape, fuse, ps, bytes, rows, blocks, segment_rows, launch_rows */\n"
            ));
            for k in &p.kernels {
                out.push_str(&format!(
                    "    {{{}, {}, {}ULL, {}, {}, {}ULL, {}ULL, {}, {}}},\n",
                    c_string(&k.elem),
                    c_string(&k.shape),
                    k.fuse,
                    c_double(k.ps),
                    c_double(k.bytes),
                    k.rows,
                    super::predict::measured_blocks(k),
                    c_double(k.segment_rows.unwrap_or(-1.0)),
                    c_double(k.launch_rows.unwrap_or(0.0)),
                ));
            }
            out.push_str("};\n");
            name
        };
        entries.push(machine_initializer(p, &table).expect("filtered by runtime_profiles"));
    }
    out.push_str(&format!(
        "static const tpace_machine tpace_machines[{}] = {{\n    {}\n}};\nstatic const int tpace_machine_count = {};\n",
        entries.len().max(1),
        entries.join(",\n    "),
        entries.len()
    ));
    out
}

/// The file-scope definition of the `tpace_model` called `name` for one pipeline
/// on `profile`, with a comment naming the profile; `fusion`: the fused
/// kernels the target prints (`None`: one step per kernel).
pub fn program_model(
    unit: Unit<'_>,
    profile: &Profile,
    fusion: Option<&crate::plan::Fusion>,
    name: &str,
) -> Result<String, String> {
    let machine = Machine::from_profile(profile)?;
    let rank = unit.pipeline.grid.rank();
    // The coefficients do not depend on the extents; the run supplies its own.
    let w =
        Workload::from_unit(unit, &vec![1; rank], 0)?.with_fusion(fusion, &unit.pipeline.arrays);
    let description: String = profile.description.replace("*/", "* /");
    Ok(format!(
        "/* The performance model's figures for this pipeline, planned for machine profile {profile} \
         ({description}): without TPACE_* the program runs the fastest plan they predict for its \
         extents, steps and device memory (`tpace plan --machine {profile}` prints the same plan). */\n\
         static const tpace_model {name} = {init};\n",
        profile = profile.name.replace("*/", "* /"),
        init = initializer(&w, &machine),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_and_strings_are_valid_c() {
        assert_eq!(c_double(4e-6), "4e-6");
        assert_eq!(c_double(2870e9), "2870000000000.0");
        assert_eq!(c_double(0.0), "0.0");
        assert_eq!(c_string("a\"b\\c\u{e9}"), "\"a\\\"b\\\\c?\"");
        for x in [4e-6, 2870e9, 49.5e9, 1.0 / 3.0] {
            assert_eq!(c_double(x).parse::<f64>().unwrap(), x);
        }
    }
}
