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
/// instantiated for 2 ..= [`Fusion::max_steps`], at most this many; the
/// runtime's `TPACE_FUSE_MAX`). 2-D row kernels go this deep: eight steps of
/// Jacobi-2D recompute 16 of a block's 256 columns and keep 9 rings of 3
/// values in registers.
pub const MAX_STEPS: u32 = 8;

/// Most steps a 3-D tile kernel advances: a 32 x 32 tile keeps 24 x 24 of its
/// columns at four steps of reach 1 (1.78 points computed per point kept), 16 x
/// 16 at eight (4.0). Past four steps a block has a multiprocessor to itself
/// (ptxas 13.5, sm_90, heat-3D in float: 195 registers a thread at five steps, 248
/// at eight, none spilled); a step count whose rings alone would not fit a thread's
/// registers is not offered ([`Fusion::tile_registers`]). Whether the deeper counts
/// pay is the machine's to say: `tpace probe` times every count and the model picks.
pub const TILE_MAX_STEPS: u32 = 8;

/// Registers a thread of a fused kernel may hold (sm_50 on): a 3-D tile's step
/// count whose estimate ([`Fusion::tile_registers`]) exceeds it would spill.
pub const THREAD_REGISTERS: u64 = 255;

/// Most steps a kernel advances for a target that chooses its steps per kernel
/// itself (OpenCL's tiled kernels, sized by the evolution-vector model): its
/// kernels and model stop at four.
pub const CHOSEN_MAX_STEPS: u32 = 4;

/// Shared memory a CUDA block may use without asking (48 KiB on every device
/// since compute capability 2.0): static shared memory stops there, and
/// dynamic shared memory beyond it needs the kernel's opt-in
/// (`cudaFuncAttributeMaxDynamicSharedMemorySize`).
pub const SHARED_WITHOUT_OPT_IN: u64 = 48 * 1024;

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
    /// Most steps one kernel may advance: every count from 2 to this many
    /// leaves a block columns of its own and, after [`Fusion::within`], fits
    /// the machine's shared memory per block.
    pub max_steps: u32,
    /// Bytes per element of the fused array (what its shared memory holds).
    pub elem_bytes: u64,
    /// Threads of a block per inner axis, innermost last (grid positions 1..).
    /// In 3-D the innermost threads of a warp hold its full width together.
    pub block: Vec<u32>,
    /// Columns each thread holds per inner axis (register blocking): along
    /// axis 2 of a 3-D grid (the contiguous one) a thread computes several
    /// neighbouring columns, so most reads along that axis come from its own
    /// registers and its loads and stores are at constant offsets.
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
        (0..self.block.len())
            .map(|a| self.kept_columns(a, steps).max(1) as u64)
            .product()
    }

    /// Columns along inner axis `a` (0 for grid position 1) one block keeps when it
    /// fuses `steps` steps: the tile less the reach on both sides, rounded down to
    /// whole threads' columns, so that every tile starts on whole threads' columns
    /// from an aligned one (the CUDA runtime's TPACE_TILE_STRIDE counts the same).
    /// Zero or less where the reach leaves none.
    pub fn kept_columns(&self, a: usize, steps: u32) -> i64 {
        let (width, cols) = (i64::from(self.tile()[a]), i64::from(self.per_thread[a]));
        let reach = i64::from(steps) * self.inner_reach[a];
        (width - 2 * reach).div_euclid(cols) * cols
    }

    /// Bytes of shared memory one block needs when it fuses `steps` steps: per
    /// step, two copies (even and odd rows) of the row the step computes, over
    /// the block's tile; a 2-D row also holds the reach beyond its ends on each
    /// side (a 3-D tile clamps reads at its sides instead: those columns are halo).
    pub fn shared_bytes(&self, steps: u32) -> u64 {
        let row: u64 = if self.block.len() == 1 {
            u64::from(self.block[0]) + 2 * self.inner_reach[0].unsigned_abs()
        } else {
            self.tile().iter().map(|t| u64::from(*t)).product()
        };
        2 * u64::from(steps) * row * self.elem_bytes
    }

    /// The fusion with at most `most` steps per kernel (`None` when that is
    /// fewer than two).
    pub fn capped(&self, most: u32) -> Option<Fusion> {
        (most >= 2).then(|| Fusion {
            max_steps: self.max_steps.min(most),
            default_steps: self.default_steps.min(most),
            ..self.clone()
        })
    }

    /// The fusion on a machine whose blocks may use `shared_limit` bytes of
    /// shared memory: step counts whose kernels need more are dropped (and the
    /// default lowered to the most that fit); `None` when not even two fit.
    pub fn within(&self, shared_limit: u64) -> Option<Fusion> {
        let max_steps = (2..=self.max_steps)
            .rev()
            .find(|t| self.shared_bytes(*t) <= shared_limit)?;
        Some(Fusion {
            max_steps,
            default_steps: self.default_steps.min(max_steps),
            ..self.clone()
        })
    }

    /// 32-bit words one value of the fused array takes in a thread's registers, times
    /// the rows of a step a thread keeps along the cut axis (its ring).
    fn ring_words(&self) -> u64 {
        (self.reach_lo + self.reach_hi + 1).unsigned_abs() * (self.elem_bytes / 4).max(1)
    }

    /// Blocks of the fused kernel with `steps` steps that share a multiprocessor: what
    /// its launch bounds ask ptxas for (the CUDA writer prints them from here), so the
    /// blocks one wave of a launch runs at once is this times the multiprocessors.
    ///
    /// 2-D rows: a thread keeps its rings, `(steps + 1)` rings of `ring_words`, and
    /// about 17 registers more (ptxas, sm_90: Jacobi-2D fits four steps in 32
    /// without spilling, the double heat2d_asym fixture's wider rings in 64); past four
    /// steps the unrolled levels keep more alive than the rings (ptxas 13.5, Jacobi-2D
    /// uncapped: 66 registers at four steps, 100 at five, 155 at eight), and 32 or 40
    /// spill several hundred bytes: at least 64 registers there (five steps spill 60
    /// bytes, eight 296). As many blocks as those registers allow, at most the 2048
    /// threads of a multiprocessor.
    ///
    /// 3-D tiles: a thread keeps `(steps + 1) · ring_words · columns` words of rings
    /// (`columns` along axis 2) and needs about 36 registers more, 12 more a step for
    /// each further word of a value (double) and 16 more for each row of the ring past
    /// three (wider reach: more reads in flight). Up to two steps, as many blocks (at
    /// most four) as those registers allow; past two and up to four, two blocks of 128 registers while
    /// they fit, else one block (255 registers). Fitted to the least cap without
    /// spills of the one-barrier-a-row kernel (ptxas 13.5, sm_90, issue 28): heat-3D in
    /// float three blocks at two steps, two at three and four, one past four (at 128
    /// registers five steps spill 188 bytes, six 556; one block: 248 registers at seven
    /// and eight, no spills); in double three, two
    /// and one (two spill 76 bytes at four steps); the 13-point star in double two
    /// blocks (this rule: one); the 19-point star in float one at every count. (The
    /// H100, 512³ heat-3D in-core with the earlier kernel: two blocks that spill a
    /// little ran four steps at 177 Glup/s against 146 for one block without spills.)
    pub fn blocks_per_multiprocessor(&self, steps: u32) -> u32 {
        let threads = u64::from(self.threads());
        let t = u64::from(steps);
        let blocks = if self.block.len() == 1 {
            let mut regs = (t + 1) * self.ring_words() + 17;
            if steps > 4 {
                regs = regs.max(64);
            }
            (65536 / (threads * regs)).min(2048 / threads).max(1)
        } else {
            let regs = self.tile_registers(steps);
            if steps <= 2 {
                (65536 / (threads * regs)).clamp(1, 4)
            } else if regs <= 128 && steps <= 4 {
                2
            } else {
                1
            }
        };
        blocks as u32
    }

    /// Registers a thread of the 3-D tile kernel needs to fuse `steps` steps without
    /// spilling, by the fit [`Fusion::blocks_per_multiprocessor`] describes: its rings,
    /// `(steps + 1) · ring_words · columns`, and about 36 more, 12 more a step for each
    /// further word of a value and 16 more for each row of the ring past three.
    pub fn tile_registers(&self, steps: u32) -> u64 {
        let t = u64::from(steps);
        let columns: u64 = self.per_thread.iter().map(|c| u64::from(*c)).product();
        let words = (self.elem_bytes / 4).max(1);
        let ring = (self.reach_lo + self.reach_hi.max(1) + 1).unsigned_abs();
        // The kernel's steps lag each other by at least a row (`TP_RHI` at least 1).
        (t + 1) * ring * words * columns + 36 + 12 * t * (words - 1) + 16 * ring.saturating_sub(3)
    }

    /// How many times more points a block computes than it keeps when it fuses
    /// `steps` steps: the tile's halo columns, `steps · reach` on each side of
    /// every inner axis, are computed again by the neighbouring block.
    pub fn overhead(&self, steps: u32) -> f64 {
        let tile = self.tile();
        tile.iter().map(|t| f64::from(*t)).product::<f64>() / self.keep(steps) as f64
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
        // Subscripts through index variables address memory, not a tile.
        || sweep.accesses.iter().any(|a| a.kept.is_some())
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
    // rows for 2-D grids; for 3-D ones two steps on 32 x 32 tiles of 256 threads (398
    // Glup/s in bench/mmt/probe.cu with 8 x 32 threads holding 4 columns along axis 1,
    // against 333 with 16 x 32 threads of one column). The 3-D threads are 32 rows of 8
    // along axis 1, each holding 4 neighbouring columns along axis 2, the contiguous
    // one: its loads and stores are at constant offsets from one address, and
    // fewer of its reads need another thread's column (issue 28): 16 bytes of them, so
    // that a thread's part of a row is one 16-byte access to shared memory (double: two
    // columns, a 32 x 16 tile, whose rings fit the registers without spilling).
    let elem_bytes = p.arrays[swap.dst].elem.bytes();
    let (default_steps, block, per_thread) = if rank == 2 {
        (4, vec![256], vec![1])
    } else {
        (2, vec![32, 8], vec![1, (16 / elem_bytes).max(1) as u32])
    };
    let mut fusion = Fusion {
        sweep: swap.writer,
        array: swap.dst,
        reach_lo,
        reach_hi,
        inner_reach,
        default_steps,
        max_steps: MAX_STEPS,
        elem_bytes,
        block,
        per_thread,
    };
    // A thread's neighbours along a register-blocked axis may only need the columns
    // the thread beside it shares (its first or last `reach`).
    let shared = fusion
        .per_thread
        .iter()
        .zip(&fusion.inner_reach)
        .all(|(c, h)| *c == 1 || i64::from(*c) >= *h);
    // Every fused step count must leave each block some columns of its own: wider
    // halos fuse fewer steps.
    let leaves_columns = |t: u32| (0..fusion.block.len()).all(|a| fusion.kept_columns(a, t) > 0);
    // A 3-D tile's rings live in registers: deeper steps than a thread holds would spill.
    let fits_registers = |t: u32| rank == 2 || fusion.tile_registers(t) <= THREAD_REGISTERS;
    let most = if rank == 2 { MAX_STEPS } else { TILE_MAX_STEPS };
    // Both only get harder with more steps: the deepest count that passes passes below it too.
    fusion.max_steps = (2..=most)
        .rev()
        .find(|t| leaves_columns(*t) && fits_registers(*t))?;
    fusion.default_steps = fusion.default_steps.min(fusion.max_steps);
    shared.then_some(fusion)
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
        // 2-D rows fuse up to MAX_STEPS, 3-D tiles up to TILE_MAX_STEPS.
        assert_eq!((j.max_steps, j.keep(8)), (super::MAX_STEPS, 240));
        assert!((j.overhead(8) - 256.0 / 240.0).abs() < 1e-12);
        assert!((j.overhead(4) - 256.0 / 248.0).abs() < 1e-12);
        let h =
            fusion_of("heat3d.c", include_str!("../../examples/heat3d.c")).expect("heat3d fuses");
        // Along axis 2 a block keeps whole threads' columns (four each): 28 of its 32
        // at two steps, 24 at three (not 26) and at four.
        assert_eq!(
            (h.default_steps, h.tile(), h.keep(2)),
            (2, vec![32, 32], 28 * 28)
        );
        assert_eq!(h.threads(), 256);
        assert_eq!((h.max_steps, h.keep(4)), (super::TILE_MAX_STEPS, 24 * 24));
        assert_eq!((h.kept_columns(1, 3), h.kept_columns(0, 3)), (24, 26));
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

    const HEAT3D: &str = include_str!("../../examples/heat3d.c");
    const HEAT3D_DOUBLE: &str = include_str!("../../tests/fixtures/layouts/heat3d_double.c");
    const STAR13: &str = include_str!("../../tests/fixtures/layouts/heat3d_star13_double.c");
    const STAR19: &str = include_str!("../../tests/fixtures/layouts/heat3d_star19.c");
    const STAR2D: &str = include_str!("../../tests/fixtures/layouts/star2d_halo3.c");

    #[test]
    fn shared_memory_is_sized_per_element_type_halo_and_steps() {
        // Per fused step two copies of the row: a 32 x 32 tile in 3-D in float, 32 x 16
        // in double (16 bytes a thread along axis 2; reads past its sides are clamped),
        // a row of 256 threads plus the reach on each side in 2-D.
        let cases = [
            (
                "jacobi2d.c",
                include_str!("../../examples/jacobi2d.c"),
                2 * 258 * 4,
            ),
            (
                "heat2d_asym.c",
                include_str!("../../tests/fixtures/layouts/heat2d_asym.c"),
                2 * 258 * 8,
            ),
            ("star2d_halo3.c", STAR2D, 2 * 262 * 8),
            ("heat3d.c", HEAT3D, 2 * 1024 * 4),
            ("heat3d_double.c", HEAT3D_DOUBLE, 2 * 512 * 8),
            ("heat3d_star13_double.c", STAR13, 2 * 512 * 8),
            ("heat3d_star19.c", STAR19, 2 * 1024 * 4),
        ];
        for (name, src, per_step) in cases {
            let f = fusion_of(name, src).unwrap_or_else(|| panic!("{name} fuses"));
            for t in 2..=super::MAX_STEPS {
                assert_eq!(
                    f.shared_bytes(t),
                    u64::from(t) * per_step,
                    "{name}, {t} steps"
                );
            }
        }
    }

    #[test]
    fn less_shared_memory_fuses_fewer_steps() {
        let f = fusion_of("heat3d_double.c", HEAT3D_DOUBLE).expect("fuses");
        // Seven steps: eight would leave a 16-column tile none of its own along axis 2.
        assert_eq!((f.max_steps, f.default_steps, f.elem_bytes), (7, 2, 8));
        assert_eq!((f.tile(), f.shared_bytes(4)), (vec![32, 16], 32 * 1024));
        let steps = |limit: u64| f.within(limit).map(|g| (g.max_steps, g.default_steps));
        assert_eq!(steps(227 * 1024), Some((7, 2)), "H100: 227 KiB a block");
        assert_eq!(steps(48 * 1024), Some((6, 2)), "48 KiB: six steps");
        assert_eq!(
            steps(32 * 1024 - 1),
            Some((3, 2)),
            "just short of four steps"
        );
        assert_eq!(steps(20_000), Some((2, 2)));
        assert_eq!(steps(16 * 1024 - 1), None, "not even two steps fit");
        // A default the machine has no room for comes down to what fits.
        let j = fusion_of("jacobi2d.c", include_str!("../../examples/jacobi2d.c")).unwrap();
        let lowered = j.within(j.shared_bytes(3)).expect("three steps fit");
        assert_eq!((lowered.max_steps, lowered.default_steps), (3, 3));
        assert_eq!(lowered.within(u64::MAX), Some(lowered.clone()));
    }

    #[test]
    fn wide_halos_fuse_as_long_as_a_block_keeps_columns() {
        // Halo 2 and 3 in 3-D (13- and 19-point stars) and 3 in 2-D: three steps leave
        // the double star's 32 x 16 tile 20 x 4 columns (four would leave none along axis
        // 2), four steps the float star's 32 x 32 tile 8 x 8, a 256-column row 232 and
        // eight steps 208.
        for (name, src, reach, most, keep) in [
            ("heat3d_star13_double.c", STAR13, 2, 3, 20 * 4),
            ("heat3d_star19.c", STAR19, 3, 4, 8 * 8),
            ("star2d_halo3.c", STAR2D, 3, 8, 208),
        ] {
            let f = fusion_of(name, src).unwrap_or_else(|| panic!("{name} fuses"));
            assert_eq!((f.reach_lo, f.reach_hi), (reach, reach), "{name}");
            assert!(f.inner_reach.iter().all(|h| *h == reach), "{name}");
            assert_eq!((f.max_steps, f.keep(most)), (most, keep), "{name}");
        }
        assert_eq!(fusion_of("star2d_halo3.c", STAR2D).unwrap().keep(4), 232);
        // Reach 4 along the inner axes of a 3-D grid: four steps would leave a tile no
        // column of its own (32 - 2 * 4 * 4), three leave 8.
        let wide = |h: i64| {
            let mut src = HEAT3D.replace(
                "halo([1:1][1:1][1:1])",
                &format!("halo([1:1][{h}:{h}][{h}:{h}])"),
            );
            for (from, to) in [
                ("a[i][j - 1][k]", format!("a[i][j - {h}][k]")),
                ("a[i][j + 1][k]", format!("a[i][j + {h}][k]")),
                ("a[i][j][k - 1]", format!("a[i][j][k - {h}]")),
                ("a[i][j][k + 1]", format!("a[i][j][k + {h}]")),
            ] {
                assert!(src.contains(from));
                src = src.replace(from, &to);
            }
            src.replace("j = 1; j < NY - 1", &format!("j = {h}; j < NY - {h}"))
                .replace("k = 1; k < NZ - 1", &format!("k = {h}; k < NZ - {h}"))
        };
        let four = fusion_of("wide4.c", &wide(4)).expect("reach 4 fuses");
        assert_eq!(
            (four.max_steps, four.default_steps, four.keep(3)),
            (3, 2, 8 * 8)
        );
        // Reach 5 along axis 2 is more than the 4 columns a thread holds there: a
        // thread would need columns two threads away.
        assert_eq!(fusion_of("wide5.c", &wide(5)), None);
    }

    #[test]
    fn rings_a_thread_can_not_hold_fuse_fewer_steps() {
        // heat-3D in float fuses eight steps (a 32 x 32 tile keeps 16 x 16); double
        // reads three planes away along the cut axis need rings of seven planes of two
        // columns in two words: four steps would need 288 registers a thread, three 248.
        let h = fusion_of("heat3d.c", HEAT3D).expect("fuses");
        assert_eq!((h.max_steps, h.keep(8)), (8, 16 * 16));
        assert!(h.tile_registers(8) <= super::THREAD_REGISTERS);
        assert_eq!(
            (
                h.blocks_per_multiprocessor(4),
                h.blocks_per_multiprocessor(5)
            ),
            (2, 1)
        );
        let src = HEAT3D_DOUBLE
            .replace("halo([1:1][1:1][1:1])", "halo([3:3][1:1][1:1])")
            .replace(
                "a[i - 1][j][k] + a[i + 1][j][k]",
                "a[i - 3][j][k] + a[i + 3][j][k]",
            )
            .replace("i = 1; i < NX - 1", "i = 3; i < NX - 3");
        assert_ne!(src, HEAT3D_DOUBLE);
        let deep = fusion_of("deep.c", &src).expect("reach 3 along the cut axis fuses");
        assert_eq!((deep.reach_lo, deep.reach_hi), (3, 3));
        assert_eq!((deep.tile_registers(3), deep.tile_registers(4)), (248, 288));
        assert_eq!(deep.max_steps, 3);
    }

    #[test]
    fn the_runtime_sizes_its_fused_kernel_arguments_for_max_steps() {
        // tpace_fuse_args holds one window per fused step: the runtime's bound must
        // be the one the translator instantiates kernels and TPACE_FUSE up to; the C
        // model's per-step-count tables have as many entries as the Rust model's.
        let runtime = crate::runtime::TYPES;
        let define = format!("#define TPACE_FUSE_MAX {}\n", super::MAX_STEPS);
        assert_eq!(runtime.matches(&define).count(), 1, "{define}");
        let model = format!("#define TPACE_MC_FUSE_MAX {}\n", super::MAX_STEPS);
        assert_eq!(crate::runtime::MODEL.matches(&model).count(), 1, "{model}");
        // OpenCL's TPACE_T goes as far as the tiled kernels the translator writes.
        let cl = format!("#define TPACE_CL_T_MAX {}\n", super::CHOSEN_MAX_STEPS);
        assert_eq!(crate::runtime::OPENCL.matches(&cl).count(), 1, "{cl}");
        const { assert!(super::TILE_MAX_STEPS <= super::MAX_STEPS) };
        const { assert!(super::CHOSEN_MAX_STEPS <= super::MAX_STEPS) };
    }

    #[test]
    fn a_capped_fusion_keeps_at_most_that_many_steps() {
        let j = fusion_of("jacobi2d.c", include_str!("../../examples/jacobi2d.c")).unwrap();
        let c = j.capped(super::CHOSEN_MAX_STEPS).expect("four steps");
        assert_eq!((c.max_steps, c.default_steps), (4, 4));
        assert_eq!(
            j.capped(3).map(|f| (f.max_steps, f.default_steps)),
            Some((3, 3))
        );
        assert_eq!(j.capped(1), None);
        assert_eq!(j.capped(99), Some(j.clone()));
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
