//! Machine profiles: the figures of one accelerator and its host link, each
//! with where it comes from. The bundled profiles live in `profiles/*.toml`
//! and are compiled into the binary; a user's file of the same form can be
//! given by path.

use serde::Deserialize;
use std::path::Path;

/// Where a figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// Measured on the machine (the source names the run).
    Measured,
    /// A vendor's public specification, not measured.
    Spec,
    /// A table or the text of one of the papers.
    Paper,
    /// Computed from other measured or published figures (the source says how).
    Derived,
    /// Assumed, neither measured nor published: replace it when you can.
    Assumed,
}

impl Provenance {
    /// The word used in the profile files and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Spec => "spec",
            Provenance::Paper => "paper",
            Provenance::Derived => "derived",
            Provenance::Assumed => "assumed",
        }
    }
}

/// One number of a profile and its origin.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The number, in the unit the field's name says.
    pub value: f64,
    /// What kind of source it has.
    pub kind: Provenance,
    /// The source itself: document, table, date, run.
    pub source: String,
}

/// Which rule of the evolution-vector algorithm a device follows (stencil-directives paper §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arch {
    /// A GPU: grow the work group along x to 32, then time, then y and z in turn.
    Gpu,
    /// A Xeon Phi: grow along x as far as the tile fits, then y and z.
    XeonPhi,
}

/// A machine profile. Every figure is optional: what needs a missing one says so.
///
/// Units are in the field names: `_gbs` 10^9 bytes per second, `_gb` 10^9
/// bytes, `_bytes` bytes, `_gflops` 10^9 floating-point operations per
/// second, `_us` microseconds; counts have no suffix.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name used on the command line and in reports.
    pub name: String,
    /// One line saying what machine this is.
    pub description: String,
    /// Evolution-vector rule the device follows.
    pub arch: Arch,
    /// The device this profile describes, as a pattern of its name: a generated
    /// program whose device's name (CUDA's `cudaDeviceProp::name`, OpenCL's
    /// `CL_DEVICE_NAME`) holds these words, in any case, plans with this profile
    /// when it is bundled ([`device_matches`]). Absent: chosen only by name.
    #[serde(default)]
    pub device: Option<String>,
    /// Device memory bandwidth, bytes read plus written per second (a copy kernel's figure).
    pub memory_gbs: Option<Figure>,
    /// Bandwidth a plain one-point-per-thread stencil kernel reaches; the model's kernel
    /// time uses it where present and `memory_gbs` otherwise.
    pub stencil_gbs: Option<Figure>,
    /// Host-to-device copy from pinned memory, one direction alone.
    pub h2d_gbs: Option<Figure>,
    /// Device-to-host copy into pinned memory, one direction alone.
    pub d2h_gbs: Option<Figure>,
    /// Both directions at once, the two together. Absent: each direction is assumed to
    /// keep its own rate while the other runs.
    pub duplex_gbs: Option<Figure>,
    /// Host-to-device copy from pageable memory (informational).
    pub h2d_pageable_gbs: Option<Figure>,
    /// Device memory a program may allocate.
    pub memory_gb: Option<Figure>,
    /// Streaming multiprocessors (or OpenCL compute units).
    pub compute_units: Option<Figure>,
    /// Processing cores as the source counts them.
    pub cores: Option<Figure>,
    /// Peak floating-point rate. Absent: kernels are taken as bound by memory bandwidth.
    pub peak_gflops: Option<Figure>,
    /// System bytes-per-flop ratio as a source states it; absent, it is
    /// `memory_gbs / peak_gflops`.
    pub bytes_per_flop: Option<Figure>,
    /// Last-level (L2) cache.
    pub l2_bytes: Option<Figure>,
    /// L1 cache per SM or core.
    pub l1_bytes: Option<Figure>,
    /// Shared (OpenCL local) memory per SM or per block.
    pub shared_bytes: Option<Figure>,
    /// On-chip memory one work group's tile may fill (the paper's S_cache).
    pub tile_bytes: Option<Figure>,
    /// Fewest work groups a launch should have (the paper's N_wg).
    pub min_work_groups: Option<Figure>,
    /// Most work items one work group may hold. Absent: no limit.
    pub max_work_group_size: Option<Figure>,
    /// Fixed cost of one kernel launch. Absent: taken as zero.
    pub launch_overhead_us: Option<Figure>,
    /// Picoseconds a fused kernel (several steps per launch, two-level blocking)
    /// spends per point and step it computes, its tiles' halos included: the floor
    /// that its shared-memory exchange and barriers set. Absent: no floor.
    pub fused_point_ps: Option<Figure>,
    /// Several devices: the rate at which a block's ghost planes go between
    /// neighbouring devices (MPI between nodes, or through host memory within one).
    /// Absent: exchanges are taken as free.
    pub exchange_gbs: Option<Figure>,
    /// Several devices: the fixed cost of one such exchange. Absent: zero.
    pub exchange_latency_us: Option<Figure>,
    /// Several devices of one node: the host memory's rate for every device's copies
    /// together, both ways (their uploads and downloads share it). Absent: each device's
    /// link is its own.
    pub host_memory_gbs: Option<Figure>,
    /// OpenCL's tiled kernels (T steps a launch in local memory): picoseconds a work
    /// item spends per point it computes there, its loads into local memory and barriers
    /// included, against which the evolution-vector choice prices T > 1 (model/opencl.rs).
    /// Absent: T is the paper's choice.
    pub tile_point_ps: Option<Figure>,
    /// Measured kernel times (`[[kernels]]`, written by `tpace probe`): per element
    /// type, stencil shape class and steps per kernel, what the kernels tpace emits
    /// spend per grid point and step. Absent, or no entry for a pipeline's class:
    /// the model prices its kernels from `stencil_gbs` and `fused_point_ps`.
    #[serde(default)]
    pub kernels: Vec<KernelFigure>,
}

/// One measured kernel time of a profile's `[[kernels]]` table: the kernels that a
/// translation of one stencil shape class and element type launches with `fuse`
/// steps per kernel, timed inside an out-of-core (mmtb) run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFigure {
    /// Element type of the arrays: `float` or `double`.
    pub elem: String,
    /// Stencil shape class ([`shape_class`]): `2d-r1` (2-D, reads one point away
    /// along every axis, e.g. 5-point), `3d-r1` (7-point), `2d-r2` (wider halo).
    pub shape: String,
    /// Steps one kernel advances (1: one step per kernel, unfused). Any depth the
    /// translation offers; nothing assumes a largest one.
    pub fuse: u64,
    /// Picoseconds of kernel time per grid point and step: the kernel busy time of a
    /// run's steady chunks (not the first and last, whose windows differ) from its
    /// trace, less `launch_overhead_us` per launch (the model adds launches on its
    /// own), over those chunks' own points times the steps.
    pub ps: f64,
    /// Device bytes per point and step of the measured program (the model scales the
    /// time by a pipeline's own bytes over these).
    pub bytes: f64,
    /// Chunk width (planes along the cut axis) of the measured launches: fused
    /// kernels on narrower chunks recompute more rows, which the model adds.
    pub rows: u64,
    /// Blocks the measured fused launches aimed at (how many segments they cut their
    /// rows into). Absent: 2048, what tpace's launches aimed at before they aimed at
    /// one wave (2026-11-25).
    #[serde(default)]
    pub blocks: Option<u64>,
    /// Rows a segment of a fused launch costs beyond its own, as measured. Absent: the
    /// rows it computes in vain, `reach · (fuse - 1) / 2` ([`crate::model::predict::fuse_row_overhead`]).
    #[serde(default)]
    pub segment_rows: Option<f64>,
    /// Rows a fused launch costs once, beyond its segments', as measured. Absent: 0.
    #[serde(default)]
    pub launch_rows: Option<f64>,
    /// What kind of source it has (the probe writes `measured`).
    pub kind: Provenance,
    /// The source: which probe, device, date and program.
    pub source: String,
}

/// The figures a profile may give, in the order of [`Profile::figures`] (the runtime's
/// reader of TPACE_MACHINE files, `tpace_figure_names` in runtime/model.h, lists the same).
pub const FIGURE_NAMES: [&str; 23] = [
    "memory_gbs",
    "stencil_gbs",
    "h2d_gbs",
    "d2h_gbs",
    "duplex_gbs",
    "h2d_pageable_gbs",
    "memory_gb",
    "compute_units",
    "cores",
    "peak_gflops",
    "bytes_per_flop",
    "l2_bytes",
    "l1_bytes",
    "shared_bytes",
    "tile_bytes",
    "min_work_groups",
    "max_work_group_size",
    "launch_overhead_us",
    "fused_point_ps",
    "exchange_gbs",
    "exchange_latency_us",
    "tile_point_ps",
    "host_memory_gbs",
];

/// The figures that are counts and must be whole numbers.
pub const WHOLE_FIGURES: [&str; 8] = [
    "compute_units",
    "cores",
    "l2_bytes",
    "l1_bytes",
    "shared_bytes",
    "tile_bytes",
    "min_work_groups",
    "max_work_group_size",
];

/// The element types `[[kernels]]` entries may name.
pub const KERNEL_ELEMS: [&str; 2] = ["float", "double"];

/// A stencil's shape class, as `[[kernels]]` keys it: `{rank}d-r{radius}`, the
/// radius being the widest halo along any axis (so a 5-point and a 9-point box
/// stencil of radius 1 share `2d-r1`).
pub fn shape_class(rank: usize, radius: u64) -> String {
    format!("{rank}d-r{radius}")
}

/// Whether a device called `name` is the one a profile's `device` pattern names:
/// the pattern's words appear in the name, in order and in any case, each a whole
/// word (letters and digits not joined to others), so that `H200` matches
/// "NVIDIA H200" and not "NVIDIA GH200 480GB". The runtime's `tpace_device_matches`
/// decides the same way.
pub fn device_matches(pattern: &str, name: &str) -> bool {
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect()
    };
    let (want, have) = (words(pattern), words(name));
    !want.is_empty() && have.windows(want.len()).any(|w| w == want.as_slice())
}

/// Whether `text` reads as a [`shape_class`].
fn is_shape_class(text: &str) -> bool {
    let Some((rank, radius)) = text.split_once("d-r") else {
        return false;
    };
    matches!(rank.parse::<u64>(), Ok(1..=8)) && matches!(radius.parse::<u64>(), Ok(0..=64))
}

/// The bundled profiles: name and file text.
const BUNDLED: [(&str, &str); 5] = [
    ("h100", include_str!("../../profiles/h100.toml")),
    ("h200", include_str!("../../profiles/h200.toml")),
    ("k40c", include_str!("../../profiles/k40c.toml")),
    ("c2070", include_str!("../../profiles/c2070.toml")),
    (
        "xeon-phi-5110p",
        include_str!("../../profiles/xeon-phi-5110p.toml"),
    ),
];

/// Names of the bundled profiles.
pub fn bundled_names() -> Vec<&'static str> {
    BUNDLED.iter().map(|(n, _)| *n).collect()
}

impl Profile {
    /// Parse profile text; `origin` names it in messages.
    pub fn parse(origin: &str, text: &str) -> Result<Profile, String> {
        let profile: Profile = toml::from_str(text)
            .map_err(|e| format!("{origin}: malformed machine profile: {e}"))?;
        profile.check(origin)?;
        Ok(profile)
    }

    /// A bundled profile by name.
    pub fn bundled(name: &str) -> Option<Profile> {
        BUNDLED.iter().find(|(n, _)| *n == name).map(|(n, text)| {
            Profile::parse(&format!("bundled profile {n}"), text)
                .expect("bundled profiles parse (tested)")
        })
    }

    /// `--machine` argument: a bundled name, or else a path to a profile file.
    pub fn load(arg: &str) -> Result<Profile, String> {
        if let Some(p) = Profile::bundled(arg) {
            return Ok(p);
        }
        let path = Path::new(arg);
        if !path.exists() {
            return Err(format!(
                "unknown machine `{arg}`: not a bundled profile ({}) and no such file",
                bundled_names().join(", ")
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read machine profile {arg}: {e}"))?;
        Profile::parse(arg, &text)
    }

    /// Every present figure, with the field name, in declaration order.
    pub fn figures(&self) -> Vec<(&'static str, &Figure)> {
        let all: [&Option<Figure>; FIGURE_NAMES.len()] = [
            &self.memory_gbs,
            &self.stencil_gbs,
            &self.h2d_gbs,
            &self.d2h_gbs,
            &self.duplex_gbs,
            &self.h2d_pageable_gbs,
            &self.memory_gb,
            &self.compute_units,
            &self.cores,
            &self.peak_gflops,
            &self.bytes_per_flop,
            &self.l2_bytes,
            &self.l1_bytes,
            &self.shared_bytes,
            &self.tile_bytes,
            &self.min_work_groups,
            &self.max_work_group_size,
            &self.launch_overhead_us,
            &self.fused_point_ps,
            &self.exchange_gbs,
            &self.exchange_latency_us,
            &self.tile_point_ps,
            &self.host_memory_gbs,
        ];
        FIGURE_NAMES
            .into_iter()
            .zip(all)
            .filter_map(|(n, f)| f.as_ref().map(|f| (n, f)))
            .collect()
    }

    /// Shared memory one block may use, in bytes: `shared_bytes`, or where the
    /// profile does not say, what every CUDA device gives a block without
    /// opting in ([`crate::plan::SHARED_WITHOUT_OPT_IN`], 48 KiB).
    pub fn shared_limit(&self) -> u64 {
        self.shared_bytes
            .as_ref()
            .map_or(crate::plan::SHARED_WITHOUT_OPT_IN, |f| f.value as u64)
    }

    /// The `[[kernels]]` entry for element type `elem`, shape class `shape` and
    /// `fuse` steps per kernel, if the profile has one.
    pub fn kernel(&self, elem: &str, shape: &str, fuse: u64) -> Option<&KernelFigure> {
        self.kernels
            .iter()
            .find(|k| k.elem == elem && k.shape == shape && k.fuse == fuse)
    }

    /// Device memory in bytes, if known.
    pub fn memory_bytes(&self) -> Option<f64> {
        self.memory_gb.as_ref().map(|f| f.value * 1e9)
    }

    /// Every figure must be a positive finite number with a source; counts whole.
    fn check(&self, origin: &str) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err(format!("{origin}: machine profile has an empty `name`"));
        }
        if let Some(d) = &self.device
            && !d.chars().any(|c| c.is_ascii_alphanumeric())
        {
            return Err(format!(
                "{origin}: `device` must name the device (words of its name, e.g. \"H100\"), not `{d}`"
            ));
        }
        for (field, f) in self.figures() {
            if !f.value.is_finite() || f.value <= 0.0 {
                return Err(format!(
                    "{origin}: `{field}` must be a positive number, not {}",
                    f.value
                ));
            }
            if WHOLE_FIGURES.contains(&field) && f.value.fract() != 0.0 {
                return Err(format!(
                    "{origin}: `{field}` must be a whole number, not {}",
                    f.value
                ));
            }
            if f.source.trim().is_empty() {
                return Err(format!("{origin}: `{field}` has no `source`"));
            }
        }
        for (i, k) in self.kernels.iter().enumerate() {
            let at = format!("{origin}: `kernels` entry {}", i + 1);
            if !KERNEL_ELEMS.contains(&k.elem.as_str()) {
                return Err(format!(
                    "{at}: `elem` must be one of {}, not `{}`",
                    KERNEL_ELEMS.join(", "),
                    k.elem
                ));
            }
            if !is_shape_class(&k.shape) {
                return Err(format!(
                    "{at}: `shape` must read like `2d-r1` (rank, radius), not `{}`",
                    k.shape
                ));
            }
            if k.fuse == 0 || k.rows == 0 {
                return Err(format!("{at}: `fuse` and `rows` must be at least 1"));
            }
            for (name, v) in [("ps", k.ps), ("bytes", k.bytes)] {
                if !v.is_finite() || v <= 0.0 {
                    return Err(format!("{at}: `{name}` must be a positive number, not {v}"));
                }
            }
            if k.source.trim().is_empty() {
                return Err(format!("{at}: has no `source`"));
            }
            if self.kernels[..i]
                .iter()
                .any(|o| (&o.elem, &o.shape, o.fuse) == (&k.elem, &k.shape, k.fuse))
            {
                return Err(format!(
                    "{at}: a second entry for {} {} fuse {}",
                    k.elem, k.shape, k.fuse
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_profile_parses_and_names_itself() {
        for name in bundled_names() {
            let p = Profile::bundled(name).unwrap();
            assert_eq!(p.name, name);
            assert!(!p.figures().is_empty());
        }
    }

    /// `profiles/h100.toml` as `tpace probe --into` refreshed it on the lent H100:
    /// the link and device figures measured by the probe, the rest as DESIGN.md §5
    /// had them, and the kernels measured per type, shape class and depth.
    #[test]
    fn h100_figures_come_from_the_probe() {
        let p = Profile::bundled("h100").unwrap();
        for (field, f) in [
            ("memory_gbs", &p.memory_gbs),
            ("h2d_gbs", &p.h2d_gbs),
            ("d2h_gbs", &p.d2h_gbs),
            ("duplex_gbs", &p.duplex_gbs),
            ("launch_overhead_us", &p.launch_overhead_us),
        ] {
            let f = f.as_ref().unwrap();
            assert_eq!(f.kind, Provenance::Measured, "{field}");
            // The link's one-way figures are the plans' copies as traced (the traces of
            // 2026-11-25, or the probe's kernel runs: its copy test was 10 % faster).
            let how = if field == "h2d_gbs" || field == "d2h_gbs" {
                "TPACE_TRACE"
            } else {
                "tpace probe on NVIDIA H100"
            };
            assert!(f.source.contains(how), "{field}: {}", f.source);
            assert!(f.source.contains("NVIDIA H100"), "{field}: {}", f.source);
        }
        // Not measured by the probe: kept as they were.
        assert_eq!(p.stencil_gbs.as_ref().unwrap().value, 2008.0);
        assert_eq!(p.tile_bytes.as_ref().unwrap().kind, Provenance::Assumed);
        for elem in KERNEL_ELEMS {
            for shape in ["2d-r1", "3d-r1", "2d-r2"] {
                for fuse in 1..=2 {
                    let k = p.kernel(elem, shape, fuse).unwrap_or_else(|| {
                        panic!("no [[kernels]] entry for {elem} {shape} fuse {fuse}")
                    });
                    assert_eq!(k.kind, Provenance::Measured);
                    assert!(k.source.contains("tpace probe"), "{}", k.source);
                }
                // Fusing two steps beats one step per kernel on every class.
                assert!(
                    p.kernel(elem, shape, 2).unwrap().ps < p.kernel(elem, shape, 1).unwrap().ps
                );
            }
        }
    }

    #[test]
    fn kernel_tables_are_checked() {
        let head = "name = \"x\"\ndescription = \"d\"\narch = \"gpu\"\n";
        let entry = |elem: &str, shape: &str, fuse: u64, ps: f64| {
            format!(
                "[[kernels]]\nelem = \"{elem}\"\nshape = \"{shape}\"\nfuse = {fuse}\nps = {ps:?}\n\
                 bytes = 8.0\nrows = 100\nkind = \"measured\"\nsource = \"s\"\n"
            )
        };
        let good = format!(
            "{head}{}{}",
            entry("float", "2d-r1", 1, 4.6),
            entry("float", "2d-r1", 4, 1.2)
        );
        let p = Profile::parse("good", &good).unwrap();
        assert_eq!(p.kernel("float", "2d-r1", 4).unwrap().ps, 1.2);
        assert!(p.kernel("double", "2d-r1", 4).is_none());
        assert!(p.kernel("float", "2d-r1", 2).is_none());
        for (text, want) in [
            (
                entry("half", "2d-r1", 1, 1.0),
                "`elem` must be one of float, double",
            ),
            (
                entry("float", "2d", 1, 1.0),
                "`shape` must read like `2d-r1`",
            ),
            (
                entry("float", "2d-r1", 0, 1.0),
                "`fuse` and `rows` must be at least 1",
            ),
            (
                entry("float", "2d-r1", 1, -1.0),
                "`ps` must be a positive number",
            ),
            (
                entry("float", "2d-r1", 1, 1.0) + &entry("float", "2d-r1", 1, 2.0),
                "a second entry for float 2d-r1 fuse 1",
            ),
        ] {
            let e = Profile::parse("bad", &format!("{head}{text}")).unwrap_err();
            assert!(e.contains(want) && e.contains("`kernels` entry"), "{e}");
        }
    }

    #[test]
    fn h200_figures_come_from_the_probe() {
        let p = Profile::bundled("h200").unwrap();
        for figure in [&p.memory_gbs, &p.h2d_gbs, &p.d2h_gbs, &p.duplex_gbs] {
            let f = figure.as_ref().unwrap();
            assert_eq!(f.kind, Provenance::Measured, "{}", f.source);
            assert!(
                f.source.contains("tpace probe on NVIDIA H200"),
                "{}",
                f.source
            );
        }
        // Its own kernel table, every shape class the probe times.
        for shape in ["2d-r1", "3d-r1", "2d-r2"] {
            assert!(p.kernel("float", shape, 1).is_some(), "{shape}");
        }
        // What the probe cannot measure stays marked as assumed.
        assert_eq!(p.exchange_gbs.as_ref().unwrap().kind, Provenance::Assumed);
    }

    #[test]
    fn paper_profiles_carry_table_4() {
        let c = Profile::bundled("c2070").unwrap();
        assert_eq!(c.bytes_per_flop.as_ref().unwrap().value, 0.14);
        assert_eq!(c.min_work_groups.as_ref().unwrap().value, 8192.0);
        let x = Profile::bundled("xeon-phi-5110p").unwrap();
        assert_eq!(x.bytes_per_flop.as_ref().unwrap().value, 0.32);
        assert_eq!(x.min_work_groups.as_ref().unwrap().value, 1024.0);
        assert_eq!(x.arch, Arch::XeonPhi);
    }

    /// The papers' GPUs carry the vendors' figures, none of them measured here:
    /// the device memory bandwidth from a datasheet or a paper, the host link
    /// derived from the PCIe generation the board specification names.
    #[test]
    fn paper_gpus_carry_datasheet_figures_marked_as_such() {
        for (name, gbs, link, pcie) in [
            ("k40c", 288.0, 15.75, "PCI Express Gen3 x16"),
            ("c2070", 144.0, 8.0, "PCI Express 2.0 x16"),
        ] {
            let p = Profile::bundled(name).unwrap();
            assert_eq!(p.memory_gbs.as_ref().unwrap().value, gbs, "{name}");
            for f in [p.h2d_gbs.as_ref().unwrap(), p.d2h_gbs.as_ref().unwrap()] {
                assert_eq!(f.value, link, "{name}");
                assert_eq!(f.kind, Provenance::Derived, "{name}");
                assert!(f.source.contains(pcie), "{name}: {}", f.source);
            }
            assert!(p.memory_gb.is_some(), "{name}");
            for (field, f) in p.figures() {
                assert_ne!(f.kind, Provenance::Measured, "{name}.{field}");
                assert_ne!(f.kind, Provenance::Assumed, "{name}.{field}");
            }
        }
    }

    #[test]
    fn unknown_name_lists_the_bundled_ones() {
        let e = Profile::load("no-such-gpu").unwrap_err();
        assert!(e.contains("unknown machine `no-such-gpu`"), "{e}");
        assert!(e.contains("h100") && e.contains("xeon-phi-5110p"), "{e}");
    }

    #[test]
    fn user_file_loads_and_bad_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("mine.toml");
        std::fs::write(
            &good,
            "name = \"mine\"\ndescription = \"d\"\narch = \"gpu\"\n\
             [h2d_gbs]\nvalue = 10\nkind = \"assumed\"\nsource = \"guess\"\n",
        )
        .unwrap();
        let p = Profile::load(good.to_str().unwrap()).unwrap();
        assert_eq!(p.h2d_gbs.unwrap().value, 10.0);

        let cases = [
            ("name = \"x\"\n", "malformed"),
            (
                "name = \"x\"\ndescription = \"d\"\narch = \"gpu\"\nhbm = 3\n",
                "unknown field",
            ),
            (
                "name = \"x\"\ndescription = \"d\"\narch = \"gpu\"\n\
                 [memory_gb]\nvalue = -1\nkind = \"spec\"\nsource = \"s\"\n",
                "positive",
            ),
            (
                "name = \"x\"\ndescription = \"d\"\narch = \"gpu\"\n\
                 [cores]\nvalue = 1.5\nkind = \"spec\"\nsource = \"s\"\n",
                "whole",
            ),
            (
                "name = \"x\"\ndescription = \"d\"\narch = \"gpu\"\n\
                 [cores]\nvalue = 2\nkind = \"guessed\"\nsource = \"s\"\n",
                "malformed",
            ),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("bad{i}.toml"));
            std::fs::write(&path, text).unwrap();
            let e = Profile::load(path.to_str().unwrap()).unwrap_err();
            assert!(e.contains(want), "case {i}: {e}");
            assert!(e.contains(path.to_str().unwrap()), "case {i}: {e}");
        }
    }
}
