//! The plan: what a back end needs to print an out-of-core program, decided
//! from the IR and its facts. Parameters that depend on the machine or the
//! run (k, chunk width, streams, schedule) are read at run time by the
//! embedded runtime; the plan fixes the defaults and everything structural.

mod fusion;
mod skew;

pub use fusion::{
    CHOSEN_MAX_STEPS, Fusion, MAX_STEPS as MAX_FUSED_STEPS, SHARED_WITHOUT_OPT_IN, TILE_MAX_STEPS,
    fusion,
};
pub use skew::{Skew, skew};

use crate::analysis::{self, Facts};
use crate::diag::Diagnostic;
use crate::ir::{Halo, Intent, Pipeline, Program};

/// A program that passed the front end and analysis, with a plan per pipeline:
/// what the model, the lowering and the back ends take.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The IR.
    pub program: Program,
    /// Per pipeline, in the program's order: what analysis found and the plan.
    pub stages: Vec<Stage>,
}

/// What analysis found about one pipeline, and its plan.
#[derive(Debug, Clone)]
pub struct Stage {
    /// Read/write sets, reach, temporaries.
    pub facts: Facts,
    /// Structural decisions.
    pub plan: Plan,
}

/// One pipeline of a compiled program with everything known about it.
#[derive(Debug, Clone, Copy)]
pub struct Unit<'a> {
    /// Its position among the program's pipelines (0 = first in the file).
    pub index: usize,
    /// The whole program (source text, path).
    pub program: &'a Program,
    /// The pipeline.
    pub pipeline: &'a Pipeline,
    /// What analysis found.
    pub facts: &'a Facts,
    /// Its plan.
    pub plan: &'a Plan,
}

impl Compiled {
    /// Pipeline `index` with its facts and plan.
    pub fn unit(&self, index: usize) -> Unit<'_> {
        Unit {
            index,
            program: &self.program,
            pipeline: &self.program.pipelines[index],
            facts: &self.stages[index].facts,
            plan: &self.stages[index].plan,
        }
    }

    /// Every pipeline with its facts and plan, in source order.
    pub fn units(&self) -> impl Iterator<Item = Unit<'_>> {
        (0..self.stages.len()).map(|i| self.unit(i))
    }
}

/// Front end, validation, facts and plan for source text (with the macros of
/// its own `#define` lines; see [`compile_program`] for a preprocessed file).
pub fn compile_source(path: &str, source: &str) -> Result<Compiled, Vec<Diagnostic>> {
    compile_program(crate::front::parse(path, source)?)
}

/// Validation, facts and plan for a program the front end has read.
pub fn compile_program(program: Program) -> Result<Compiled, Vec<Diagnostic>> {
    analysis::validate(&program)?;
    let stages = program
        .pipelines
        .iter()
        .map(|p| {
            let facts = analysis::facts(&program, p);
            let plan = plan(&program, p, &facts);
            Stage { facts, plan }
        })
        .collect();
    Ok(Compiled { program, stages })
}

/// Out-of-core schedules a generated program can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Schedule {
    /// Every step, every chunk goes to the device and back (the baseline).
    Naive,
    /// Overlapped chunks: ghost planes for k steps, shrinking windows (tpace paper Fig. 4).
    Mm,
    /// Chunks in order with time-skewed windows; the planes a chunk needs from its
    /// predecessor are handed over on the device (MMTB paper §4): no point is computed twice.
    Mmtb,
    /// The whole grid resident on the device for all steps (when it fits; the baseline).
    Incore,
}

impl Schedule {
    /// Name used in `TPACE_SCHEDULE` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Naive => "naive",
            Schedule::Mm => "mm",
            Schedule::Mmtb => "mmtb",
            Schedule::Incore => "incore",
        }
    }

    /// Every schedule, for sweeps and `--schedule` parsing.
    pub const ALL: [Schedule; 4] = [
        Schedule::Naive,
        Schedule::Mm,
        Schedule::Mmtb,
        Schedule::Incore,
    ];
}

/// How a listed array moves between host and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// Read and written: in and out every block of k steps.
    UpDown,
    /// Only read: in every block.
    Up,
    /// Pure temporary: moved only in the last block, for its final values.
    LastBlock,
    /// The temporary of a copy sweep run as a swap ([`Swap::tmp`]): never on the
    /// device. Its final values on the copy's box are the copy's destination's, so
    /// the last block downloads that box of the destination's buffer into it; the
    /// rest of it no sweep writes.
    Folded,
    /// Listed but never touched by a sweep.
    Unused,
}

impl Transfer {
    /// The runtime's `enum tpace_transfer` constant.
    pub fn c_name(self) -> &'static str {
        match self {
            Transfer::UpDown => "TPACE_UPDOWN",
            Transfer::Up => "TPACE_UP",
            Transfer::LastBlock => "TPACE_LAST_BLOCK",
            Transfer::Folded => "TPACE_FOLDED",
            Transfer::Unused => "TPACE_UNUSED",
        }
    }
}

/// Defaults used when the `TPACE_*` environment variables are unset and the
/// program can not tell how much device memory it has (with a budget, the
/// runtime picks `incore` when the grid fits and sizes the chunks otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    /// Time steps per transfer.
    pub k: u32,
    /// Number of chunks the cut axis is divided into (the chunk width is derived).
    pub chunks: u32,
    /// Async queues.
    pub streams: u32,
}

/// Structural decisions shared by every back end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Planes one whole time step reads below and above a computed plane along the cut axis.
    pub step_reach: Halo,
    /// Per sweep: extra planes it computes beyond the step's window because later
    /// sweeps of the same step read them.
    pub sweep_extra: Vec<Halo>,
    /// Per listed array.
    pub transfers: Vec<Transfer>,
    /// Per listed array: `Some(why)` when its download after the last step is
    /// skipped because the program never reads it after the pipeline (why, with
    /// `file:line`: see [`Plan::unread_of`]); `None` for arrays that come back, or
    /// never move out.
    pub unread: Vec<Option<String>>,
    /// Per listed array that comes back after the last step: which MPI ranks receive its
    /// final values (rank 0 alone where the program only outputs it afterwards, see
    /// [`analysis::Receivers`]); `None` for arrays that do not come back.
    pub receivers: Vec<Option<analysis::Receivers>>,
    /// Window skews of the `mmtb` schedule.
    pub skew: Skew,
    /// The copy sweep that runs as a buffer swap, if any.
    pub swap: Option<Swap>,
    /// How one kernel advances several steps, if the pipeline qualifies.
    pub fusion: Option<Fusion>,
    /// Run-time defaults.
    pub defaults: Defaults,
}

/// Plan one validated pipeline of `program`.
pub fn plan(program: &Program, p: &Pipeline, facts: &Facts) -> Plan {
    // Walk the sweeps backwards: sweep s must also produce what sweeps after it read.
    // Only reads of arrays some sweep writes carry a dependence from step to step;
    // an array no sweep writes is the same at every step, so its reads do not widen
    // the region a step depends on. They still need its planes on the device: the
    // step's reach is at least the planes any sweep reads of it beyond its window.
    let mut sweep_extra = vec![Halo::default(); p.body.len()];
    let mut acc = Halo::default();
    let mut constant_need = Halo::default();
    for (s, sweep) in p.body.iter().enumerate().rev() {
        sweep_extra[s] = acc;
        let (changing, constant) = cut_axis_reach(sweep, facts);
        constant_need.minus = constant_need.minus.max(acc.minus + constant.minus);
        constant_need.plus = constant_need.plus.max(acc.plus + constant.plus);
        acc.minus += changing.minus;
        acc.plus += changing.plus;
    }
    let step_reach = Halo {
        minus: acc.minus.max(constant_need.minus),
        plus: acc.plus.max(constant_need.plus),
    };
    // With pointers rotated, no copy runs as a swap: the rotation is the swap.
    let swap = find_swap(p, facts).filter(|_| p.rotation.is_none());
    let transfers: Vec<Transfer> = p
        .arrays
        .iter()
        .zip(&facts.arrays)
        .enumerate()
        .map(|(i, (a, f))| match (a.intent, f.read, f.written) {
            _ if swap.is_some_and(|s| s.tmp == i) => Transfer::Folded,
            (_, false, false) => Transfer::Unused,
            (Intent::InOut, _, true) if f.pure_temporary => Transfer::LastBlock,
            (Intent::InOut, _, true) => Transfer::UpDown,
            _ => Transfer::Up,
        })
        .collect();
    let skew = skew(p, swap);
    let mut unread = unread(program, facts, &transfers);
    // A rotated array's final values are in whichever storage its pointer names
    // after the loop: every one comes back.
    if let Some(r) = &p.rotation {
        for (a, u) in unread.iter_mut().enumerate() {
            if r.moves(a) {
                *u = None;
            }
        }
    }
    // Those that come back (rotated arrays too) go to the ranks the analysis
    // names (for a rotated array, those of every pointer of its cycle).
    let receivers = facts
        .arrays
        .iter()
        .zip(&transfers)
        .zip(&unread)
        .map(|((f, t), unread)| {
            let back = matches!(t, Transfer::UpDown | Transfer::LastBlock | Transfer::Folded);
            (back && unread.is_none()).then(|| f.receivers.clone())
        })
        .collect();
    Plan {
        step_reach,
        sweep_extra,
        transfers,
        unread,
        receivers,
        fusion: fusion(program, p, facts, swap, &skew),
        skew,
        swap,
        // k = 32 hides the bus behind the kernels on the H100 for Jacobi-2D and
        // heat-3D (bench/RESULTS.md); three streams let one chunk's upload, the
        // next one's kernels and the previous one's download overlap.
        defaults: Defaults {
            k: 32,
            chunks: 4,
            streams: 3,
        },
    }
}

/// Per array, why its final download is skipped: it moves out after the last
/// step ([`Transfer::UpDown`], [`Transfer::LastBlock`], [`Transfer::Folded`]) and
/// the program never reads it after the pipeline. Downloads between blocks stay:
/// the next block reads them.
fn unread(program: &Program, facts: &Facts, transfers: &[Transfer]) -> Vec<Option<String>> {
    facts
        .arrays
        .iter()
        .zip(transfers)
        .map(|(f, t)| match (&f.after, t) {
            (
                analysis::After::Unread { at, how },
                Transfer::UpDown | Transfer::LastBlock | Transfer::Folded,
            ) => {
                let (line, _) = crate::diag::line_col(&program.source, *at);
                Some(format!("{}:{line}: {how}", program.path))
            }
            _ => None,
        })
        .collect()
}

impl Plan {
    /// Whether rank 0 alone receives array `a`'s final values under MPI.
    pub fn to_root(&self, a: usize) -> bool {
        matches!(self.receivers[a], Some(analysis::Receivers::Root(_)))
    }

    /// The sentence `tpace plan` prints for array `a` (named `name`) that comes back
    /// after the last step: which MPI ranks receive it, and why.
    pub fn receivers_of(&self, a: usize, name: &str) -> Option<String> {
        self.receivers[a].as_ref().map(|r| match r {
            analysis::Receivers::Root(how) => {
                format!("with several MPI ranks, rank 0 alone receives `{name}` after the pipeline ({how})")
            }
            analysis::Receivers::Every(why) => {
                format!("with several MPI ranks, every rank receives `{name}` after the pipeline ({why})")
            }
        })
    }

    /// The sentence `tpace plan` and `tpace check` print for array `a` (named
    /// `name`) when its final download is skipped.
    pub fn unread_of(&self, a: usize, name: &str) -> Option<String> {
        self.unread[a].as_ref().map(|why| {
            format!(
                "download of `{name}` after the last step skipped: the program never reads it after the pipeline ({why})"
            )
        })
    }
}

/// A sweep's read reach along the cut axis, split into reads of arrays that some
/// sweep writes (they change from step to step) and of arrays none writes.
fn cut_axis_reach(sweep: &crate::ir::Sweep, facts: &Facts) -> (Halo, Halo) {
    let (mut changing, mut constant) = (Halo::default(), Halo::default());
    for acc in &sweep.accesses {
        if acc.kind != crate::ir::AccessKind::Read {
            continue;
        }
        let off = acc.offsets[0];
        let h = if facts.arrays[acc.array].written {
            &mut changing
        } else {
            &mut constant
        };
        h.minus = h.minus.max(-off);
        h.plus = h.plus.max(off);
    }
    (changing, constant)
}

/// Most dimensions of a grid whose copy sweep may run as a swap (the runtime's
/// `TPACE_MAX_RANK`: it downloads the folded temporary's box with index arrays
/// of this size).
pub const MAX_SWAP_RANK: usize = crate::runtime::MAX_RANK;

/// A copy sweep `dst = tmp` that runs as a buffer swap: the sweep that writes
/// `tmp` writes `dst`'s second device buffer instead, the copy is skipped, and the
/// two buffers trade roles every step. `tmp` itself never lives on the device
/// ([`Transfer::Folded`]): after the last step it equals `dst` on the copy's box
/// (the copy made them equal) and keeps its values elsewhere (no sweep writes
/// there), so its final values come from `dst`'s buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swap {
    /// The sweep that computes `tmp`.
    pub writer: usize,
    /// The copy sweep `dst = tmp`.
    pub copy: usize,
    /// The array the copy writes (gets a second device buffer).
    pub dst: usize,
    /// The pure temporary the copy reads.
    pub tmp: usize,
}

/// The copy sweep that can become a swap, if any. Conditions, each needed for
/// the swapped program to equal the sequential one: the copy is the step's last
/// sweep; `tmp` is a pure temporary written by exactly one earlier sweep over the
/// same box as the copy and read by nothing but the copy, of `dst`'s element
/// type; `dst` is written only by the copy; no sweep between the writer and the
/// copy touches either array; the grid has at most [`MAX_SWAP_RANK`] dimensions.
pub fn find_swap(p: &Pipeline, facts: &Facts) -> Option<Swap> {
    // The runtime downloads the folded temporary's box with index arrays of this size.
    if p.grid.rank() > MAX_SWAP_RANK {
        return None;
    }
    let last = p.body.len().checked_sub(1)?;
    let (dst, tmp) = facts.sweeps[last].copy?;
    // A copy between element types converts each value: the writer's values must be
    // rounded to the temporary's type first, and the temporary's bytes are not the
    // destination's, so such a copy runs as written.
    if !facts.arrays[tmp].pure_temporary || p.arrays[dst].elem != p.arrays[tmp].elem {
        return None;
    }
    let writers = |a: usize| -> Vec<usize> {
        (0..p.body.len())
            .filter(|s| facts.sweeps[*s].writes.contains(&a))
            .collect()
    };
    let readers = |a: usize| -> Vec<usize> {
        (0..p.body.len())
            .filter(|s| facts.sweeps[*s].reads.contains(&a))
            .collect()
    };
    let [writer] = writers(tmp)[..] else {
        return None;
    };
    if writers(dst) != [last] || readers(tmp) != [last] || writer >= last {
        return None;
    }
    let bounds = |s: usize| {
        let mut b: Vec<(usize, String, String)> = p.body[s]
            .loops
            .iter()
            .map(|l| (l.pos, l.lo.clone(), l.hi.clone()))
            .collect();
        b.sort();
        b
    };
    if bounds(writer) != bounds(last) {
        return None;
    }
    let untouched = (writer + 1..last).all(|s| {
        let f = &facts.sweeps[s];
        ![dst, tmp]
            .iter()
            .any(|a| f.reads.contains(a) || f.writes.contains(a))
    });
    untouched.then_some(Swap {
        writer,
        copy: last,
        dst,
        tmp,
    })
}
