//! Two-level blocking (MMT, MMTB paper §2.1; DESIGN.md §3): one kernel
//! advances several time steps of a tile in on-chip memory, on top of any
//! out-of-core schedule. This pass decides whether a pipeline qualifies and
//! how: the step's one computing sweep, its reach, and the tile a thread block
//! works on. The back end prints the kernel; the runtime groups the steps.
//!
//! A pipeline qualifies when, with its copy sweep run as a swap, every step is
//! one sweep that reads only the swapped array (and scalars) and writes only
//! the temporary the copy reads, in a grid of two or three dimensions, with a
//! star-shaped stencil (every read moves along one axis at most): reads along
//! the cut axis come from a ring of rows each thread keeps in registers, reads
//! along the other axes from the tile's row in shared memory.

use super::{Skew, Swap};
use crate::analysis::Facts;
use crate::ir::{AccessKind, Pipeline, Program, ScalarRole};

/// Most steps one fused kernel may advance (the generated kernels are
/// instantiated for 2 ..= this many).
pub const MAX_STEPS: u32 = 4;

/// How the step's sweep runs several steps per kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fusion {
    /// The sweep every step runs (the swap's writer).
    pub sweep: usize,
    /// The array it reads: the swapped one, two buffers on the device.
    pub array: usize,
    /// Rows a step reads below a computed row along the cut axis.
    pub reach_lo: i64,
    /// Rows a step reads above a computed row along the cut axis.
    pub reach_hi: i64,
    /// Per inner axis (grid positions 1..), the largest offset a read moves.
    pub inner_reach: Vec<i64>,
    /// Steps per kernel unless `TPACE_FUSE` says otherwise.
    pub default_steps: u32,
    /// Threads of a block per inner axis, innermost last (grid positions 1..).
    /// In 3-D the innermost is one warp (32 threads) wide.
    pub block: Vec<u32>,
    /// Columns each thread holds per inner axis (register blocking): along
    /// axis 1 of a 3-D grid a thread computes several neighbouring columns, so
    /// most reads along that axis come from its own registers.
    pub per_thread: Vec<u32>,
}

impl Fusion {
    /// Threads per block.
    pub fn threads(&self) -> u32 {
        self.block.iter().product()
    }

    /// Columns of a block's tile per inner axis: threads times columns each.
    pub fn tile(&self) -> Vec<u32> {
        self.block
            .iter()
            .zip(&self.per_thread)
            .map(|(b, c)| b * c)
            .collect()
    }

    /// Elements of a row (plane) one block keeps when it fuses `steps` steps.
    pub fn keep(&self, steps: u32) -> u64 {
        self.tile()
            .iter()
            .zip(&self.inner_reach)
            .map(|(t, h)| (i64::from(*t) - 2 * i64::from(steps) * h).max(1) as u64)
            .product()
    }

    /// How many times more points a block computes than it keeps when it fuses
    /// `steps` steps: the tile's halo columns, `steps · reach` on each side of
    /// every inner axis, are computed again by the neighbouring block.
    pub fn overhead(&self, steps: u32) -> f64 {
        let tile = self.tile();
        let useful: f64 = tile
            .iter()
            .zip(&self.inner_reach)
            .map(|(t, h)| (f64::from(*t) - 2.0 * f64::from(steps) * *h as f64).max(1.0))
            .product();
        tile.iter().map(|t| f64::from(*t)).product::<f64>() / useful
    }
}

/// Whether and how the pipeline's steps can be fused (see the module docs).
pub fn fusion(
    program: &Program,
    p: &Pipeline,
    facts: &Facts,
    swap: Option<Swap>,
    skew: &Skew,
) -> Option<Fusion> {
    let swap = swap?;
    let rank = p.grid.rank();
    if p.body.len() != 2 || !(2..=3).contains(&rank) || !p.reductions.is_empty() {
        return None;
    }
    let sweep = &p.body[swap.writer];
    let f = &facts.sweeps[swap.writer];
    let only =
        |set: &std::collections::BTreeSet<usize>, a: usize| set.len() == 1 && set.contains(&a);
    if !only(&f.reads, swap.dst) || !only(&f.writes, swap.tmp) {
        return None;
    }
    // Values that change per step or come from the time counter stay out: a fused
    // kernel runs several steps with one set of arguments.
    let time = &p.time.var;
    let body = &program.source[sweep.body.clone()];
    if !sweep.step_values.is_empty()
        || crate::text::mentions(body, time)
        || sweep.loops.iter().any(|l| l.fixed)
        || sweep.scalars.iter().any(|s| {
            s.role == ScalarRole::Reduction || (s.role != ScalarRole::PerPoint && s.ty.is_none())
        })
    {
        return None;
    }
    let mut reach_lo = 0;
    let mut reach_hi = 0;
    let mut inner_reach = vec![0; rank - 1];
    for acc in &sweep.accesses {
        if acc.kind == AccessKind::Write {
            if acc.offsets.iter().any(|o| *o != 0) {
                return None;
            }
            continue;
        }
        let moved: Vec<usize> = (0..rank).filter(|d| acc.offsets[*d] != 0).collect();
        match moved[..] {
            [] => {}
            [0] => {
                reach_lo = reach_lo.max(-acc.offsets[0]);
                reach_hi = reach_hi.max(acc.offsets[0]);
            }
            [d] => inner_reach[d - 1] = inner_reach[d - 1].max(acc.offsets[d].abs()),
            _ => return None,
        }
    }
    // The hand-over of intermediate steps between mmtb chunks keeps each step's
    // rows apart only when the windows move at least as far per step as a step reads.
    if skew.per_step < reach_lo.max(reach_hi) {
        return None;
    }
    // Measured on the H100 (bench/RESULTS.md, 2026-11-23): four steps on 256-wide
    // rows for 2-D grids; for 3-D ones two steps on 32 x 32 tiles of 8 x 32 threads,
    // each holding 4 columns along axis 1 (398 Glup/s in bench/mmt/probe.cu, against
    // 333 with 16 x 32 threads of one column).
    let (default_steps, block, per_thread) = if rank == 2 {
        (4, vec![256], vec![1])
    } else {
        (2, vec![8, 32], vec![4, 1])
    };
    let fusion = Fusion {
        sweep: swap.writer,
        array: swap.dst,
        reach_lo,
        reach_hi,
        inner_reach,
        default_steps,
        block,
        per_thread,
    };
    // Every fused step count must leave each block some columns of its own, and a
    // thread's neighbours along a register-blocked axis may only need the columns
    // the thread beside it shares (its first or last `reach`).
    let fits = fusion
        .tile()
        .iter()
        .zip(&fusion.inner_reach)
        .all(|(t, h)| i64::from(*t) > 2 * i64::from(MAX_STEPS) * h)
        && fusion
            .per_thread
            .iter()
            .zip(&fusion.inner_reach)
            .all(|(c, h)| *c == 1 || i64::from(*c) >= *h);
    fits.then_some(fusion)
}

#[cfg(test)]
mod tests {
    use crate::plan::compile_source;

    fn fusion_of(name: &str, src: &str) -> Option<super::Fusion> {
        compile_source(name, src)
            .expect("compiles")
            .stages
            .remove(0)
            .plan
            .fusion
    }

    #[test]
    fn jacobi_and_heat3d_fuse_the_others_do_not() {
        let j = fusion_of("jacobi2d.c", include_str!("../../examples/jacobi2d.c"))
            .expect("jacobi fuses");
        assert_eq!(
            (j.reach_lo, j.reach_hi, j.inner_reach.clone()),
            (1, 1, vec![1])
        );
        assert_eq!((j.default_steps, j.block.clone()), (4, vec![256]));
        assert_eq!(j.keep(4), 248);
        assert!((j.overhead(4) - 256.0 / 248.0).abs() < 1e-12);
        let h =
            fusion_of("heat3d.c", include_str!("../../examples/heat3d.c")).expect("heat3d fuses");
        assert_eq!(
            (h.default_steps, h.tile(), h.keep(2)),
            (2, vec![32, 32], 28 * 28)
        );
        assert_eq!(h.threads(), 256);
        assert!((h.overhead(2) - 1024.0 / 784.0).abs() < 1e-12);
        // One dimension (no tile to share), reductions, several sweeps per step.
        for (name, src) in [
            ("heat1d.c", include_str!("../../examples/heat1d.c")),
            ("himeno.c", include_str!("../../examples/himeno.c")),
            ("cip2d.c", include_str!("../../examples/cip2d.c")),
            ("fdtd2d.c", include_str!("../../examples/fdtd2d.c")),
        ] {
            assert_eq!(fusion_of(name, src), None, "{name}");
        }
    }

    #[test]
    fn the_runtime_sizes_its_fused_kernel_arguments_for_max_steps() {
        // tpace_fuse_args holds one window per fused step: the runtime's bound must
        // be the one the translator instantiates kernels and TPACE_FUSE up to.
        let runtime = crate::runtime::TYPES;
        let define = format!("#define TPACE_FUSE_MAX {}\n", super::MAX_STEPS);
        assert_eq!(runtime.matches(&define).count(), 1, "{define}");
    }

    #[test]
    fn a_diagonal_read_or_a_constant_array_keeps_one_step_per_kernel() {
        let jacobi = include_str!("../../examples/jacobi2d.c");
        let star = "(a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0";
        assert!(jacobi.contains(star));
        let diagonal = jacobi.replace(
            star,
            "(a[x - 1][y - 1] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0",
        );
        assert_eq!(fusion_of("diagonal.c", &diagonal), None);
        assert!(fusion_of("jacobi2d.c", jacobi).is_some());
    }
}
