//! Predicting one schedule with given parameters: transfer volumes, work,
//! time and device memory (DESIGN.md §3).
//!
//! The timing model, per block of k steps: each chunk has an upload time
//! `U`, a kernel time `K` (points times the cost of a point, plus launches,
//! plus MMTB's device-to-device hand-over) and a download time `D`. The
//! runtime's executor (`schedule.h`, `tpace_next`) puts chunk c on queue
//! `c mod S` (mmtb: at least two queues when there are two chunks or more), and
//! on that queue issues, in order, its upload (after the queue's previous
//! chunk has handed its planes over), its kernels (after chunk c-1's kernels:
//! the hand-over, or in mm the GPU they share), its download. So the end of
//! chunk c's kernels waits for chunk c-1's kernels (`K` a chunk), uploads follow
//! uploads (`U`), downloads follow downloads (`D`), and chunk c's upload waits
//! for the download of chunk c-S on its queue: the cycle kernels(c-S) →
//! download(c-S) → upload(c) → kernels(c) spans S chunks. A chunk's share of
//! the steady state (the longest cycle per chunk) is therefore
//! `max(K, U, D, (U + K + D) / S, both / duplex)`, the last term for uploads
//! and downloads sharing the link when they run at once; where a chunk's `U + D`
//! exceeds that share the copies must meet, and while they do each runs at its
//! part of the duplex rate, which stretches them ([`steady`]). One queue (or one
//! chunk) overlaps nothing. A block takes the first chunk's `U + K + D` plus
//! `C - 1` such cycles (so the pipeline's fill and drain cost one chunk's
//! `U + D`, proportional to b); the runtime waits for every queue at the end of a
//! block, so blocks add up. A third stream thus helps where `(U + K + D) / 2`
//! exceeds `max(K, U, D)` (copies and kernels of similar length), a fourth
//! where `(U + K + D) / 3` still does, and nothing elsewhere. Checked against the
//! traces of the model's plans on the H100 (tests/model_traces.rs): a steady
//! chunk's U, K, D, its share and the whole run within 10 %.
//!
//! The cost of a point: a profile's measured `[[kernels]]` entry for the
//! pipeline's element type, shape class and steps per kernel when it has one
//! (scaled by the pipeline's bytes per point over the measured program's, and
//! for fused kernels by the rows a narrower chunk recomputes; measured on the
//! steady chunks of a run, launch gaps out, which the model adds per launch as
//! `launch_overhead_us`: src/probe/kernels.rs); otherwise device
//! memory traffic at `stencil_gbs`, shared by the fused steps, with
//! `fused_point_ps` as a floor.

use super::chunks;
use super::profile::{KernelFigure, Profile};
use super::workload::Workload;

/// The schedules the model predicts (DESIGN.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Schedule {
    /// The whole grid on the device: one upload, all steps, one download.
    Incore,
    /// Every step every chunk goes in and out (k = 1).
    Naive,
    /// Overlapped chunks: ghost planes for k steps, shrinking windows, redundant work.
    Mm,
    /// Chunks in order with a device-side hand-over: no redundant work.
    Mmtb,
}

impl Schedule {
    /// Every schedule.
    pub const ALL: [Schedule; 4] = [
        Schedule::Incore,
        Schedule::Naive,
        Schedule::Mm,
        Schedule::Mmtb,
    ];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Incore => "incore",
            Schedule::Naive => "naive",
            Schedule::Mm => "mm",
            Schedule::Mmtb => "mmtb",
        }
    }
}

/// Parameters of one plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    /// Schedule.
    pub schedule: Schedule,
    /// Time steps per transfer.
    pub k: u64,
    /// Chunk width in planes.
    pub b: u64,
    /// Streams (async queues) asked for.
    pub streams: u64,
}

/// The machine figures the model uses, in SI units.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Profile name.
    pub name: String,
    /// Device memory bandwidth for copies, bytes read plus written per second.
    pub memory_bps: f64,
    /// Bandwidth stencil kernels reach, bytes per second.
    pub kernel_bps: f64,
    /// Host-to-device bytes per second.
    pub h2d_bps: f64,
    /// Device-to-host bytes per second.
    pub d2h_bps: f64,
    /// Both directions together, bytes per second, if known.
    pub duplex_bps: Option<f64>,
    /// Peak floating-point operations per second, if known.
    pub peak_flops: Option<f64>,
    /// Seconds per kernel launch.
    pub launch_s: f64,
    /// Device memory in bytes, if known.
    pub memory_bytes: Option<f64>,
    /// Seconds a fused kernel spends per point and step it computes (0: no floor).
    pub fused_point_s: f64,
    /// Several devices: bytes per second of ghost planes between neighbours (0: free).
    pub exchange_bps: f64,
    /// Several devices: seconds of one exchange's fixed cost.
    pub exchange_latency_s: f64,
    /// Several devices of one node: bytes per second of every device's copies together,
    /// both ways (0: unknown, each link its own).
    pub host_memory_bps: f64,
    /// Measured kernel times (the profile's `[[kernels]]`).
    pub kernels: Vec<KernelFigure>,
    /// Multiprocessors (the profile's `compute_units`; 0: unknown).
    pub units: u64,
}

impl Machine {
    /// The model's figures from a profile; says which are missing.
    pub fn from_profile(p: &Profile) -> Result<Machine, String> {
        let need = [
            ("memory_gbs", &p.memory_gbs),
            ("h2d_gbs", &p.h2d_gbs),
            ("d2h_gbs", &p.d2h_gbs),
        ];
        let missing: Vec<&str> = need
            .iter()
            .filter(|(_, f)| f.is_none())
            .map(|(n, _)| *n)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "machine profile `{}` lacks {}, which the out-of-core model needs",
                p.name,
                missing.join(", ")
            ));
        }
        let gbs = |f: &Option<super::profile::Figure>| f.as_ref().map(|f| f.value * 1e9);
        let memory_bps = gbs(&p.memory_gbs).expect("checked");
        Ok(Machine {
            name: p.name.clone(),
            memory_bps,
            kernel_bps: gbs(&p.stencil_gbs).unwrap_or(memory_bps),
            h2d_bps: gbs(&p.h2d_gbs).expect("checked"),
            d2h_bps: gbs(&p.d2h_gbs).expect("checked"),
            duplex_bps: gbs(&p.duplex_gbs),
            peak_flops: p.peak_gflops.as_ref().map(|f| f.value * 1e9),
            launch_s: p
                .launch_overhead_us
                .as_ref()
                .map_or(0.0, |f| f.value * 1e-6),
            memory_bytes: p.memory_bytes(),
            fused_point_s: p.fused_point_ps.as_ref().map_or(0.0, |f| f.value * 1e-12),
            exchange_bps: gbs(&p.exchange_gbs).unwrap_or(0.0),
            exchange_latency_s: p
                .exchange_latency_us
                .as_ref()
                .map_or(0.0, |f| f.value / 1e6),
            host_memory_bps: gbs(&p.host_memory_gbs).unwrap_or(0.0),
            kernels: p.kernels.clone(),
            units: p.compute_units.as_ref().map_or(0, |f| f.value as u64),
        })
    }

    /// The measured kernel time for `w`'s element type and shape class with `fuse`
    /// steps per kernel, if the profile has one.
    pub fn kernel_figure(&self, w: &Workload, fuse: u64) -> Option<&KernelFigure> {
        self.kernels
            .iter()
            .find(|k| k.elem == w.elem && k.shape == w.shape && k.fuse == fuse.max(1))
    }

    /// Whether the search may price `fuse` steps per kernel for `w`: one step always;
    /// a fused depth where the profile measured it, or, where it measured no depth of
    /// `w`'s element type and shape class at all (a spec sheet), every depth its
    /// formula can price ([`formula_prices`]). A depth the profile left out beside
    /// measured ones would be priced from the formula against measured neighbours,
    /// which flatters it (the H200's measured table of one to four steps for 3-D
    /// tiles, eight offered: the formula took six); `tpace probe` times it.
    pub fn depth_priced(&self, w: &Workload, fuse: u64) -> bool {
        fuse <= 1
            || self.kernel_figure(w, fuse).is_some()
            || (!self.measured_class(w) && formula_prices(w, fuse))
    }

    /// Whether the profile measured any depth of `w`'s element type and shape class.
    pub fn measured_class(&self, w: &Workload) -> bool {
        self.kernels
            .iter()
            .any(|k| k.elem == w.elem && k.shape == w.shape)
    }

    /// Seconds per point and step of `w`'s kernels with `fuse` steps each over
    /// chunks of `rows` planes, from the measured figure `f` (see the module comment).
    pub fn measured_point_cost(&self, w: &Workload, f: &KernelFigure, fuse: u64, rows: u64) -> f64 {
        let rows_ratio = if fuse > 1 {
            let wave = self.fuse_wave(w, fuse);
            let measured_at = measured_blocks(f);
            fuse_row_overhead(w, rows, fuse, wave, Some(f))
                / fuse_row_overhead(w, f.rows, fuse, measured_at, Some(f))
        } else {
            one_step_row_overhead(f, rows) / one_step_row_overhead(f, f.rows)
        };
        scaled_figure_seconds(
            f,
            w.bytes_per_point,
            w.kernels_per_step,
            fuse,
            self.memory_bps,
        ) * rows_ratio
    }

    /// Blocks a launch of `w`'s fused kernel with `fuse` steps aims at, as the runtime
    /// does: one wave, the multiprocessors times the blocks that share one; where
    /// either is unknown, [`FUSE_BLOCKS`].
    pub fn fuse_wave(&self, w: &Workload, fuse: u64) -> u64 {
        let per_sm = w
            .fuse_blocks_per_sm
            .get(fuse as usize)
            .copied()
            .unwrap_or(0);
        if self.units > 0 && per_sm > 0 {
            self.units * per_sm
        } else {
            FUSE_BLOCKS
        }
    }

    /// Seconds one grid point costs per step: memory or compute, whichever is slower.
    pub fn point_cost(&self, w: &Workload) -> f64 {
        self.fused_point_cost(w, 1, w.n)
    }

    /// The same when one kernel advances `fuse` steps (two-level blocking) over
    /// launches of `rows` rows: the device memory traffic of a step is shared by
    /// `fuse` steps, and a block computes `w.fuse_overhead[fuse]` points for every
    /// point it keeps across the other axes and [`fuse_row_overhead`] along the cut axis.
    pub fn fused_point_cost(&self, w: &Workload, fuse: u64, rows: u64) -> f64 {
        let flops_only = self.peak_flops.map_or(0.0, |p| w.flops_per_point / p);
        if let Some(f) = self.kernel_figure(w, fuse) {
            let overhead = if fuse > 1 {
                let wave = self.fuse_wave(w, fuse);
                w.fuse_overhead[fuse as usize] * fuse_row_overhead(w, rows, fuse, wave, Some(f))
            } else {
                1.0
            };
            return self
                .measured_point_cost(w, f, fuse, rows)
                .max(flops_only * overhead);
        }
        let (steps, overhead) = if fuse > 1 {
            (
                fuse as f64,
                w.fuse_overhead[fuse as usize]
                    * fuse_row_overhead(w, rows, fuse, self.fuse_wave(w, fuse), None),
            )
        } else {
            (1.0, 1.0)
        };
        let mem = w.bytes_per_point / self.kernel_bps * overhead / steps;
        let flops = flops_only * overhead;
        let floor = if fuse > 1 {
            self.fused_point_s * overhead
        } else {
            0.0
        };
        mem.max(flops).max(floor)
    }
}

/// Whether the bandwidth formula can price `fuse` steps per kernel for `w`: not where
/// the kernel holds a multiprocessor alone while a shallower fused depth shares one
/// (`fuse_blocks_per_sm`). The formula counts bytes and recomputed points, not the
/// warps that hide a block's barriers: on the H100 heat-3D's five steps a kernel, one
/// block a multiprocessor, took 4.04 ps a point and step against 2.16 at four with
/// two blocks, and in double four steps (one block) 12.1 against 5.9 at three (two);
/// the spec sheet's formula took six steps and ran 3.5 times its prediction
/// (bench/RESULTS.md, sixteenth session).
pub fn formula_prices(w: &Workload, fuse: u64) -> bool {
    let blocks = |d: u64| w.fuse_blocks_per_sm.get(d as usize).copied().unwrap_or(0);
    fuse <= 1 || blocks(fuse) != 1 || (2..fuse).all(|d| blocks(d) <= 1)
}

/// What one plan costs, according to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The plan, normalised (k at most the step count, b at most n; incore
    /// k = steps, b = n, one stream; naive k = 1).
    pub config: Config,
    /// Chunks along the cut axis.
    pub chunks: u64,
    /// Chunk buffers (queues) in flight: [`slots_for`], the runtime's count.
    pub slots: u64,
    /// Blocks of k steps (the last may be shorter).
    pub blocks: u64,
    /// Bytes host to device over the run.
    pub h2d_bytes: u128,
    /// Bytes device to host over the run.
    pub d2h_bytes: u128,
    /// Bytes copied device to device (MM's lower-ghost carry, MMTB's hand-over).
    pub d2d_bytes: u128,
    /// Grid-point updates computed, redundant ones included.
    pub points: u128,
    /// Grid-point updates computed more than once (MM's shrinking windows).
    pub redundant_points: u128,
    /// Kernel launches.
    pub launches: u128,
    /// Seconds of host-to-device transfer, alone.
    pub h2d_s: f64,
    /// Seconds of device-to-host transfer, alone.
    pub d2h_s: f64,
    /// Seconds of kernel work (points x cost of a point).
    pub kernel_s: f64,
    /// Seconds of launch overhead.
    pub launch_s: f64,
    /// Seconds of device-to-device copies.
    pub d2d_s: f64,
    /// Predicted wall time with copies and kernels overlapped.
    pub total_s: f64,
    /// Device memory the plan allocates, in bytes.
    pub device_bytes: u128,
    /// Steps one kernel advances under this plan (1: one step per kernel).
    pub fuse: u64,
}

impl Prediction {
    /// Seconds of the device's own work: kernels, their launches and device copies.
    pub fn device_s(&self) -> f64 {
        self.kernel_s + self.launch_s + self.d2d_s
    }

    /// Sum of the parts, as if nothing overlapped.
    pub fn serial_s(&self) -> f64 {
        self.h2d_s + self.d2h_s + self.kernel_s + self.launch_s + self.d2d_s
    }

    /// Seconds that overlap hides: serial sum minus predicted total.
    pub fn overlap_s(&self) -> f64 {
        self.serial_s() - self.total_s
    }
}

/// A plan that needs more device memory than there is.
#[derive(Debug, Clone, PartialEq)]
pub struct NoFit {
    /// Bytes the plan needs.
    pub needed: u128,
    /// Bytes available.
    pub cap: u128,
}

impl std::fmt::Display for NoFit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "needs {} of device memory, {} available",
            bytes(self.needed as f64),
            bytes(self.cap as f64)
        )
    }
}

/// Refuse a plan that does not fit `cap` bytes.
pub fn check_fit(p: &Prediction, cap: u128) -> Result<(), NoFit> {
    if p.device_bytes > cap {
        Err(NoFit {
            needed: p.device_bytes,
            cap,
        })
    } else {
        Ok(())
    }
}

/// Human form of a byte count (10^9 = GB).
pub fn bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.2} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// Normalise a config the way the runtime does; refuse impossible ones.
pub fn normalise(w: &Workload, c: Config) -> Result<Config, String> {
    if c.k == 0 || c.b == 0 || c.streams == 0 {
        return Err(format!(
            "k, b and streams must be at least 1 (k={}, b={}, streams={})",
            c.k, c.b, c.streams
        ));
    }
    let steps = w.steps.max(1);
    let mut c = c;
    match c.schedule {
        Schedule::Incore => {
            c.k = steps;
            c.b = w.n;
            c.streams = 1;
        }
        Schedule::Naive => c.k = 1,
        Schedule::Mm | Schedule::Mmtb => c.k = c.k.min(steps),
    }
    // mmtb takes chunks narrower than the hand-over too: the runtime hands the
    // same planes over (tests/examples.rs runs b = 1 with k = 5).
    c.b = c.b.min(w.n);
    Ok(c)
}

/// Chunk buffers (and queues) in flight, as the runtime's `tpace_slots_for` counts
/// them: the streams asked for, at most one per chunk; mmtb keeps two at least
/// where there are two chunks or more, to hand planes from one to the next.
pub fn slots_for(c: Config, n_chunks: u64) -> u64 {
    let want = if c.schedule == Schedule::Mmtb && n_chunks > 1 {
        c.streams.max(2)
    } else {
        c.streams
    };
    want.min(n_chunks)
}

/// MMTB hand-over planes per array between consecutive chunks: skew (k-1) + below.
pub fn handover(w: &Workload, k: u64) -> u64 {
    w.skew * (k.max(1) - 1) + w.handover_below
}

/// Steps one kernel advances under a normalised plan (the runtime's
/// `tpace_fuse_for`): the program's fused step count, except for naive and for
/// mmtb chunks narrower than a strip's `skew + h_lo` rows.
pub fn fuse_for(w: &Workload, c: Config) -> u64 {
    let narrow =
        c.schedule == Schedule::Mmtb && chunks::count(w.n, c.b) > 1 && c.b < w.skew + w.h_lo;
    if w.fuse <= 1 || c.schedule == Schedule::Naive || narrow {
        1
    } else {
        w.fuse
    }
}

/// Blocks a fused launch aims at where the machine's multiprocessors are unknown (the
/// runtime's `TPACE_MC_FUSE_BLOCKS`); otherwise one wave ([`Machine::fuse_wave`]).
pub const FUSE_BLOCKS: u64 = 2048;

/// Seconds per point and step of a program with `bytes` device bytes per point and
/// `kernels` kernels a step, from the kernel figure `f` measured on another program of
/// its element type and shape class (one kernel a step), `fuse` steps a kernel. One
/// step a kernel: the figure's memory time (its bytes at the device's copy rate
/// `memory_bps`) scaled to the program's bytes, and the rest (instructions, latency:
/// what a kernel costs beyond moving its bytes) once per kernel. Scaling the whole
/// figure by the bytes priced CIP-2D's kernels (56 bytes, two kernels) from Jacobi-2D's
/// one-step figure (8 bytes, 4.57 ps, of which 2.79 is memory at 2870 GB/s) at 32.0 ps
/// a point and step; they took about 23.5 (H100, 2026-11-26: runs of 0.41 s where the
/// model said 0.57), and Himeno's (56 bytes, from heat-3D's 3.63 ps) at 25.4 where its
/// kernels took 22.4. Fused kernels are bound by instructions, which grow with the
/// arrays a point reads: their figure scales by the bytes whole. The runtime's
/// `tpace_scaled_figure_seconds`.
pub fn scaled_figure_seconds(
    f: &KernelFigure,
    bytes: f64,
    kernels: u64,
    fuse: u64,
    memory_bps: f64,
) -> f64 {
    let measured = f.ps * 1e-12;
    if fuse > 1 || memory_bps <= 0.0 || f.bytes <= 0.0 {
        return measured * (bytes / f.bytes.max(f64::MIN_POSITIVE));
    }
    // A figure faster than the copy rate allows (caches) is all memory time.
    let memory = (f.bytes / memory_bps).min(measured);
    let rest = measured - memory;
    rest * kernels.max(1) as f64 + memory * (bytes / f.bytes)
}

/// Rows of the cut axis each block of a fused launch streams over, when `tiles`
/// blocks cover the other axes, the launch has `rows` rows and aims at `blocks`
/// blocks (the runtime's `tpace_mc_fuse_segment_of`): segments of at most 1024 rows,
/// as many as a wave of `blocks` holds or a multiple of that, so that every wave is
/// whole; each at least 4 times the rows a block streams in vain (`fuse · reach`).
/// Measured on the H100 (bench/RESULTS.md, 2026-11-25, fourth session): Jacobi-2D's
/// 2458-row chunks (61440 columns, 8 steps a kernel, 256 tiles, 528 blocks a wave) in
/// 3 segments, 768 blocks, ran 6 % slower per point than 1967-row chunks in 2, and as
/// fast in 4; without the 1024-row bound (one wave of 24576-row segments) the in-core
/// grid ran 4 % slower than in 48 segments, and heat-3D in-core (3410 tiles) 5 % slower
/// in 1 segment (6.5 waves) than in 2.
pub fn fuse_segment(rows: u64, tiles: u64, fuse: u64, reach: u64, blocks: u64) -> u64 {
    // Segments a wave holds: at most `blocks` blocks (where the tiles alone are fewer).
    let per_wave = (blocks / tiles.max(1)).max(1);
    let segments = rows.div_ceil(1024).max(1).div_ceil(per_wave) * per_wave;
    rows.div_ceil(segments).max(4 * fuse * reach)
}

/// What a fused kernel's launches over chunks of `rows` planes cost per row they
/// keep along the cut axis, aiming at `blocks` blocks ([`fuse_segment`]): each
/// segment of `seg` rows costs `segment_rows` more, and each launch `launch_rows`
/// more, where the kernel's measured `figure` gives them. Otherwise a segment costs
/// the rows it computes in vain: step l of `fuse` computes the rows the later
/// steps read beyond the segment, `(fuse - l) · (h_lo + h_hi)` more than it keeps,
/// so over the steps `reach · fuse (fuse - 1) / 2` rows more than its `fuse · seg`.
/// Measured on the H100 (Jacobi-2D, 8 steps a kernel, 61440 columns, k = 128, b =
/// 1586 and 793, aiming at 512 to 4096 blocks, 2026-11-25): 26.5 rows a segment and
/// 133 a launch fit all eight runs' kernel times within 0.7 %, where the rows
/// computed in vain (7) explain a third of what more segments cost.
pub fn fuse_row_overhead(
    w: &Workload,
    rows: u64,
    fuse: u64,
    blocks: u64,
    figure: Option<&KernelFigure>,
) -> f64 {
    let seg = segment_of(w, rows, fuse, blocks);
    let segment = figure
        .and_then(|f| f.segment_rows)
        .unwrap_or_else(|| rows_in_vain(w, fuse));
    let launch = figure.and_then(|f| f.launch_rows).unwrap_or(0.0);
    1.0 + segment / seg as f64 + launch / rows.max(1) as f64
}

/// What a one-step launch over chunks of `rows` planes costs per row it computes: each
/// launch `launch_rows` more where the figure `f` gives it (a launch's ramp and tail;
/// absent: none). Measured on the H200 (2026-11-26): Himeno ELARGE at k = 64 on chunks
/// of 2 planes under a 4 GB budget ran 0.81 s where the model, pricing its 16448
/// launches of two planes each as the heat-3D figure's 40-plane ones, said 0.55 s.
pub fn one_step_row_overhead(f: &KernelFigure, rows: u64) -> f64 {
    1.0 + f.launch_rows.unwrap_or(0.0) / rows.max(1) as f64
}

/// Rows of each segment of `w`'s fused launches with `fuse` steps over chunks of
/// `rows` planes aiming at `blocks` blocks ([`fuse_segment`] with `w`'s tiles and reach).
pub fn segment_of(w: &Workload, rows: u64, fuse: u64, blocks: u64) -> u64 {
    let keep = w.fuse_keep[fuse as usize].max(1);
    fuse_segment(rows, w.plane.div_ceil(keep), fuse, w.h_lo + w.h_hi, blocks)
}

/// Rows a segment of `w`'s fused launches with `fuse` steps computes in vain for the
/// later steps, beyond its own ([`fuse_row_overhead`]): `reach · (fuse - 1) / 2`.
pub fn rows_in_vain(w: &Workload, fuse: u64) -> f64 {
    ((w.h_lo + w.h_hi) * fuse.saturating_sub(1)) as f64 / 2.0
}

/// The blocks the launches of a measured figure aimed at: its `blocks`, or
/// [`FUSE_BLOCKS`] for a figure measured before launches aimed at one wave.
pub fn measured_blocks(f: &KernelFigure) -> u64 {
    f.blocks.unwrap_or(FUSE_BLOCKS)
}

/// Planes of each fused-mmtb hand-over strip (the runtime's `tpace_strip_planes_for`).
pub fn strip_planes(w: &Workload, c: Config) -> u64 {
    if fuse_for(w, c) <= 1 || c.schedule != Schedule::Mmtb || chunks::count(w.n, c.b) <= 1 {
        return 0;
    }
    let fuse = fuse_for(w, c);
    c.k / fuse * (fuse - 1) * (w.skew + w.h_lo)
}

/// Kernel groups of a block of `kb` steps with `fuse` steps per fused kernel
/// (the runtime's `tpace_flips` at the block's end): the steps go in groups of
/// `fuse`, the few left over one at a time.
pub fn kernel_groups(kb: u64, fuse: u64) -> u64 {
    if fuse <= 1 {
        return kb;
    }
    kb / fuse + kb % fuse
}

/// Device memory a (normalised) plan allocates, in bytes.
///
/// incore: the whole grid of every array on the device. naive and mm:
/// `slots` buffers of `b + (h_lo + h_hi) k` planes per array, plus the
/// runtime's carry buffer of `h_lo k` planes per array (`tpace_acc_plan_bytes`).
/// mmtb: `max(2, slots)` buffers of `m + b + above` planes per array, m the
/// hand-over (one buffer of b planes when there is one chunk), as
/// `tpace_slot_planes_for` and `tpace_slots_for` in the runtime count them; the
/// second buffer of a swapped array counts too.
pub fn device_bytes(w: &Workload, c: Config) -> u128 {
    let per_plane =
        w.plane_bytes(|a| a.movement.on_device()) + u128::from(w.extra_bytes_per_point * w.plane);
    let count = chunks::count(w.n, c.b);
    let slots = u128::from(c.streams.min(count));
    let planes = match c.schedule {
        Schedule::Incore => u128::from(w.n),
        Schedule::Naive | Schedule::Mm => {
            slots * u128::from(c.b + (w.h_lo + w.h_hi) * c.k) + u128::from(w.h_lo * c.k)
        }
        // The runtime keeps two slots at least to hand planes from one to the next.
        Schedule::Mmtb if count > 1 => {
            u128::from(c.streams.max(2).min(count))
                * u128::from(handover(w, c.k) + c.b + w.upload_above)
        }
        Schedule::Mmtb => u128::from(c.b),
    };
    // Fused mmtb: one strip per slot for the fused array (a chunk reads its
    // predecessor's strip in place).
    let strips = match c.schedule {
        Schedule::Mmtb if count > 1 => {
            u128::from(c.streams.max(2).min(count))
                * u128::from(strip_planes(w, c))
                * u128::from(w.plane)
                * u128::from(w.strip_elem_bytes)
        }
        _ => 0,
    };
    planes * per_plane + strips
}

/// Counts of one block (they do not depend on the number of streams).
#[derive(Debug, Clone, Copy, Default)]
struct Block {
    h2d: u128,
    d2h: u128,
    d2d: u128,
    points: u128,
    redundant: u128,
    launches: u128,
    /// The part of a chunk's download the next upload into its slot waits for ([`out_first`]).
    out_first: f64,
}

/// Predict one plan.
pub fn predict(w: &Workload, m: &Machine, c: Config) -> Result<Prediction, String> {
    let mut all = predict_streams(w, m, c, &[c.streams])?;
    Ok(all.remove(0))
}

/// Predict one schedule, k and b for several stream counts at once (the
/// counts are shared; only the overlap differs). `c.streams` is ignored.
pub fn predict_streams(
    w: &Workload,
    m: &Machine,
    c: Config,
    streams: &[u64],
) -> Result<Vec<Prediction>, String> {
    let c = normalise(w, Config { streams: 1, ..c })?;
    let n_chunks = chunks::count(w.n, c.b);
    let steps = w.steps;
    let (full_blocks, last_k) = if steps == 0 {
        (0, 0)
    } else if steps.is_multiple_of(c.k) {
        (steps / c.k - 1, c.k)
    } else {
        (steps / c.k, steps % c.k)
    };
    let mut parts: Vec<(Block, u64)> = Vec::with_capacity(2);
    if steps > 0 {
        if full_blocks > 0 {
            parts.push((block(w, c, n_chunks, c.k, false), full_blocks));
        }
        parts.push((block(w, c, n_chunks, last_k, true), 1));
    }
    let mut total = Block::default();
    for (b, times) in &parts {
        let t = u128::from(*times);
        total.h2d += b.h2d * t;
        total.d2h += b.d2h * t;
        total.d2d += b.d2d * t;
        total.points += b.points * t;
        total.redundant += b.redundant * t;
        total.launches += b.launches * t;
    }
    let fuse = fuse_for(w, c);
    let cost = m.fused_point_cost(w, fuse, c.b);
    streams
        .iter()
        .map(|&s| {
            let c = normalise(w, Config { streams: s, ..c })?;
            let slots = slots_for(c, n_chunks);
            let total_s = parts
                .iter()
                .map(|(b, times)| block_time(w, m, c, n_chunks, slots, b) * *times as f64)
                .sum();
            Ok(Prediction {
                config: c,
                chunks: n_chunks,
                slots,
                blocks: if steps == 0 { 0 } else { full_blocks + 1 },
                h2d_bytes: total.h2d,
                d2h_bytes: total.d2h,
                d2d_bytes: total.d2d,
                points: total.points,
                redundant_points: total.redundant,
                launches: total.launches,
                h2d_s: total.h2d as f64 / m.h2d_bps,
                d2h_s: total.d2h as f64 / m.d2h_bps,
                kernel_s: total.points as f64 * cost,
                launch_s: total.launches as f64 * m.launch_s,
                d2d_s: copy_s(m, total.d2d),
                total_s,
                device_bytes: device_bytes(w, c),
                fuse,
            })
        })
        .collect()
}

/// Seconds to copy `bytes` on the device (the copy figure counts bytes read plus written).
fn copy_s(m: &Machine, bytes: u128) -> f64 {
    2.0 * bytes as f64 / m.memory_bps
}

/// Counts of one block of `kb` steps (`last`: the final block, where temporaries move).
fn block(w: &Workload, c: Config, n_chunks: u64, kb: u64, last: bool) -> Block {
    let in_plane = w.plane_bytes(|a| a.moves_in(last));
    let out_plane = w.plane_bytes(|a| a.moves_out(last));
    // A plane of every array on the device, the swap's second buffer included: the
    // hand-over copies both buffers of a swapped array (the runtime's `tpace_mmtb_in`;
    // heat-3D's hand-overs took 1.52 ms, where one buffer and the strips would be 1.05).
    let dev_plane =
        w.plane_bytes(|a| a.movement.on_device()) + u128::from(w.extra_bytes_per_point * w.plane);
    let plane = u128::from(w.plane);
    let n = u128::from(w.n);
    let kb128 = u128::from(kb);
    let fuse = fuse_for(w, c);
    let launches =
        u128::from(n_chunks) * u128::from(kernel_groups(kb, fuse)) * u128::from(w.kernels_per_step);
    let (h2d_planes, d2d_bytes, computed_planes) = match c.schedule {
        Schedule::Incore => (n, 0, n * kb128),
        Schedule::Naive | Schedule::Mm => {
            // The chunk and its upper ghost come from the host; the lower ghost
            // comes from the previous chunk's buffer through the carry buffer
            // (copied in and out: twice).
            let up = chunks::upper(w.n, c.b, w.h_hi * kb);
            let carry = 2 * chunks::lower(w.n, c.b, w.h_lo * kb) * in_plane;
            let computed = n * kb128
                + chunks::upper_over_steps(w.n, c.b, w.h_hi, kb)
                + chunks::lower_over_steps(w.n, c.b, w.h_lo, kb);
            (n + up, carry, computed)
        }
        Schedule::Mmtb => {
            // Each chunk also uploads the h_hi planes above it; chunks after the
            // first receive the hand-over from their predecessor (the fused
            // kernels' strips are read in place, not copied).
            let up = chunks::upper(w.n, c.b, w.h_hi);
            let handover = u128::from(n_chunks - 1) * u128::from(handover(w, kb)) * dev_plane;
            (n + up, handover, n * kb128)
        }
    };
    let points = computed_planes * plane;
    Block {
        h2d: h2d_planes * in_plane,
        d2h: n * out_plane,
        d2d: d2d_bytes,
        points,
        redundant: points - n * kb128 * plane,
        launches,
        out_first: out_first(w, c, n_chunks, kb),
    }
}

/// The part of an mmtb chunk's download that the next upload into its slot waits for.
/// The runtime downloads on a queue of its own, first the planes from where that upload
/// begins (the chunk's own planes: its width less the k - 1 steps' skew its finished
/// planes lag behind, counted here with the hand-over's planes), then the rest; 1 for the
/// other schedules and one chunk, whose uploads wait for the whole download.
pub fn out_first(w: &Workload, c: Config, n_chunks: u64, kb: u64) -> f64 {
    if c.schedule != Schedule::Mmtb || n_chunks <= 1 || c.b == 0 {
        return 1.0;
    }
    c.b.saturating_sub(handover(w, kb)) as f64 / c.b as f64
}

/// Wall time of one block with `slots` chunk buffers in flight.
/// Seconds of a block's kernels, their launches included (not the hand-over).
fn kernels_s(w: &Workload, m: &Machine, c: Config, b: &Block) -> f64 {
    b.points as f64 * m.fused_point_cost(w, fuse_for(w, c), c.b) + b.launches as f64 * m.launch_s
}

fn block_time(w: &Workload, m: &Machine, c: Config, n_chunks: u64, slots: u64, b: &Block) -> f64 {
    let kernel = kernels_s(w, m, c, b) + copy_s(m, b.d2d);
    if c.schedule == Schedule::Incore {
        b.h2d as f64 / m.h2d_bps + kernel + b.d2h as f64 / m.d2h_bps
    } else {
        let cn = n_chunks as f64;
        pipeline(
            m,
            n_chunks,
            slots,
            b.h2d as f64 / cn,
            kernel / cn,
            b.d2h as f64 / cn,
            b.out_first,
        )
    }
}

/// Time of `chunks` chunks through `slots` queues, per chunk: `in_bytes`
/// up, `t_k` seconds of kernels, `out_bytes` down, of which the part `out_first`
/// goes before the slot's next upload may start (see the module comment).
/// The first chunk runs whole and alone: its upload before any kernel (fill),
/// its download after them; every further chunk adds its steady share, so the
/// pipeline's fill and drain cost one chunk's `U + D` beyond the kernels, and a
/// narrower chunk pays less of it (and more launches, hand-overs and halo rows).
pub fn pipeline(
    m: &Machine,
    chunks: u64,
    slots: u64,
    in_bytes: f64,
    t_k: f64,
    out_bytes: f64,
    out_first: f64,
) -> f64 {
    let t_in = in_bytes / m.h2d_bps;
    let t_out = out_bytes / m.d2h_bps;
    let first = t_in + t_k + t_out;
    if slots <= 1 || chunks <= 1 {
        return chunks as f64 * first;
    }
    // Every further chunk: the longest cycle of the executor's dependences, per chunk.
    first + (chunks - 1) as f64 * steady(m, slots, in_bytes, t_k, out_bytes, out_first).cycle_s
}

/// Most rounds of the fixed point in [`steady`] (each shrinks the error by 2σ(1 - 1/S) ≤
/// 0.4, so six leave under 0.5 % of the stretch, itself a few per cent of the cycle);
/// where the copies need not meet, one round settles it.
const OVERLAP_ROUNDS: usize = 6;

/// A chunk's steady state with `slots` queues: how long its copies take as they
/// run, how long they overlap, and the chunk's share of the time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steady {
    /// Seconds of the chunk's upload, stretched where it shares the link with a download.
    pub upload_s: f64,
    /// Seconds of the chunk's download, stretched likewise.
    pub download_s: f64,
    /// Seconds an upload and a download of the pipeline run at once, per chunk.
    pub overlap_s: f64,
    /// Seconds a chunk adds: the longest cycle of the executor's dependences, per chunk.
    pub cycle_s: f64,
}

/// The steady state of chunks with `in_bytes` up, `t_k` seconds of kernels (the
/// hand-over included) and `out_bytes` down, through `slots` queues (at least two).
///
/// The copies of different chunks go up and down at once when they must: a chunk's
/// upload and download together take `U + D`, and when that exceeds the cycle `T`
/// they overlap by at least `o = U + D - T` (with two queues the executor's order
/// makes exactly that: chunk c + 2's upload follows chunk c's download and meets
/// chunk c + 1's). While both run, the link carries `duplex_gbs` in all, shared in
/// proportion to the one-way rates, so each copy loses `σ = 1 - duplex / (h2d +
/// d2h)` of the overlapped time (H100: 0.20). The traces of 2026-11-25 show it:
/// Jacobi-2D's uploads took 9.2 ms alone and 10.1 ms where they met a download
/// (tests/fixtures/traces). `T` depends on the stretched copies and they on `T`: a
/// few rounds of the fixed point settle it. With copies that fit beside the kernels
/// (`U + D ≤ K`) nothing changes.
///
/// A queue's round is its chunk's upload, kernels and the part `out_first` of its
/// download that the slot's next upload waits for (mmtb's downloads have a queue of their
/// own, [`out_first`]); the slot's next hand-over waits for the whole download, a round
/// of kernels and download.
pub fn steady(
    m: &Machine,
    slots: u64,
    in_bytes: f64,
    t_k: f64,
    out_bytes: f64,
    out_first: f64,
) -> Steady {
    let t_in = in_bytes / m.h2d_bps;
    let t_out = out_bytes / m.d2h_bps;
    let both = m.duplex_bps.map_or(0.0, |d| (in_bytes + out_bytes) / d);
    let lose = m
        .duplex_bps
        .map_or(0.0, |d| (1.0 - d / (m.h2d_bps + m.d2h_bps)).max(0.0));
    let s = slots.max(1) as f64;
    let mut o = 0.0;
    let mut st = Steady {
        upload_s: t_in,
        download_s: t_out,
        overlap_s: 0.0,
        cycle_s: 0.0,
    };
    for _ in 0..OVERLAP_ROUNDS {
        let up = t_in + lose * o;
        let down = t_out + lose * o;
        let around = ((up + t_k + out_first * down) / s).max((t_k + down) / s);
        let t = t_k.max(up).max(down).max(both).max(around);
        st = Steady {
            upload_s: up,
            download_s: down,
            overlap_s: o,
            cycle_s: t,
        };
        let next = (up + down - t).max(0.0);
        // Settled (at once where the copies need not meet): the rounds left change nothing.
        if next == o {
            break;
        }
        o = next;
    }
    st
}

/// What the model says one chunk of a full block costs (the parts a trace shows).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkParts {
    /// Seconds of the chunk's kernels, launch gaps included.
    pub kernels_s: f64,
    /// Seconds of its hand-over (device-to-device copies before its kernels).
    pub handover_s: f64,
    /// The steady state: copies as they run and the chunk's share of the time.
    pub steady: Steady,
}

/// The model's parts of an average chunk of the plan's first block (a full one
/// where there are several), at the plan's stream count.
pub fn chunk_parts(w: &Workload, m: &Machine, c: Config) -> Result<ChunkParts, String> {
    let c = normalise(w, c)?;
    let n_chunks = chunks::count(w.n, c.b);
    let kb = c.k.min(w.steps.max(1));
    let last = w.steps <= c.k;
    let b = block(w, c, n_chunks, kb, last);
    let cn = n_chunks as f64;
    let kernels = kernels_s(w, m, c, &b);
    let handover = copy_s(m, b.d2d);
    let slots = slots_for(c, n_chunks).max(2);
    Ok(ChunkParts {
        kernels_s: kernels / cn,
        handover_s: handover / cn,
        steady: steady(
            m,
            slots,
            b.h2d as f64 / cn,
            (kernels + handover) / cn,
            b.d2h as f64 / cn,
            b.out_first,
        ),
    })
}

#[cfg(test)]
pub(crate) mod tests;
