//! What the performance model needs to know about one program and one run:
//! a plain [`Workload`], filled by hand in tests or derived from a compiled
//! program with [`Workload::from_unit`].

use super::expr::Macros;
use super::profile::shape_class;
use crate::ir::ElemType;
use crate::plan::Unit;
use crate::plan::{Fusion, MAX_FUSED_STEPS, Transfer};

/// How an array moves between host and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movement {
    /// In and out once per block of k steps.
    InOut,
    /// In once per block of k steps, never out.
    In,
    /// A pure temporary: needs device space but crosses the bus only in the
    /// last block (in and out, for its final values), like the planner's
    /// [`Transfer::LastBlock`].
    Temporary,
    /// The temporary of a copy run as a swap ([`Transfer::Folded`]): no device
    /// space; out in the last block (its final values come from the copy's
    /// destination; counted as whole planes).
    Folded,
    /// Never touched: no device space, no transfer.
    Unused,
}

impl Movement {
    /// Moved host to device in a block (`last`: the final block of the run).
    pub fn moves_in(self, last: bool) -> bool {
        matches!(self, Movement::InOut | Movement::In) || (last && self == Movement::Temporary)
    }

    /// Moved device to host in a block.
    pub fn moves_out(self, last: bool) -> bool {
        self == Movement::InOut || (last && matches!(self, Movement::Temporary | Movement::Folded))
    }

    /// Occupies device memory.
    pub fn on_device(self) -> bool {
        !matches!(self, Movement::Unused | Movement::Folded)
    }
}

/// One array of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayLoad {
    /// Name, for reports.
    pub name: String,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// How it moves.
    pub movement: Movement,
    /// The program never reads it after the pipeline: nothing of it crosses the
    /// bus in the last block ([`Plan::unread`](crate::plan::Plan::unread)).
    pub unread: bool,
    /// Under MPI only rank 0 receives its final values after the pipeline
    /// ([`Plan::receivers`](crate::plan::Plan::receivers)); otherwise every rank does.
    pub to_root: bool,
}

impl ArrayLoad {
    /// Moved host to device in a block (`last`: the final block of the run).
    pub fn moves_in(&self, last: bool) -> bool {
        self.movement.moves_in(last)
            && !(last && self.unread && self.movement == Movement::Temporary)
    }

    /// Moved device to host in a block.
    pub fn moves_out(&self, last: bool) -> bool {
        self.movement.moves_out(last) && !(last && self.unread)
    }
}

/// Everything the model counts with. The grid is cut along its outermost
/// axis into planes; every other dimension is folded into the plane.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Planes along the cut axis.
    pub n: u64,
    /// Elements per plane (product of the other extents).
    pub plane: u64,
    /// Time steps.
    pub steps: u64,
    /// Listed arrays.
    pub arrays: Vec<ArrayLoad>,
    /// Planes one time step reads below a computed plane along the cut axis.
    pub h_lo: u64,
    /// Planes one time step reads above a computed plane along the cut axis.
    pub h_hi: u64,
    /// MMTB time skew: planes the computed window moves down per step (h_hi
    /// for a one-sweep stencil, 2 for Jacobi with a copy sweep).
    pub skew: u64,
    /// Floating-point operations per grid point and step (all sweeps).
    pub flops_per_point: f64,
    /// Device-memory bytes read plus written per grid point and step (all sweeps).
    pub bytes_per_point: f64,
    /// Kernels (sweeps) launched per chunk and step.
    pub kernels_per_step: u64,
    /// MMTB: planes below its own that a chunk takes over from its predecessor,
    /// besides `skew` per step after the first (the runtime's `below`).
    pub handover_below: u64,
    /// MMTB: planes above its own that a chunk uploads (the runtime's `above`).
    pub upload_above: u64,
    /// Device bytes per grid point beyond one copy of every array: the second
    /// buffer of an array whose copy sweep runs as a swap.
    pub extra_bytes_per_point: u64,
    /// Steps one kernel advances (two-level blocking; 1: one step per kernel).
    pub fuse: u64,
    /// Most steps the fused kernels may advance (1: no fused kernels); the plan
    /// search tries every count from 2 to this ([`super::search::depths`]).
    pub fuse_max: u64,
    /// Per fused step count F (index F; 1.0 at 0 and 1): points a block of a fused
    /// kernel computes for every point it keeps (its halo columns are its neighbours').
    pub fuse_overhead: Vec<f64>,
    /// Bytes per element of the fused array, whose mmtb strips carry the fused
    /// kernels' intermediate steps (0: no fusion).
    pub strip_elem_bytes: u64,
    /// Per fused step count F (index F): elements of a row (plane) one block of a
    /// fused kernel keeps (1 where there is no fusion).
    pub fuse_keep: Vec<u64>,
    /// Per fused step count F (index F): blocks of the fused kernel that share a
    /// multiprocessor ([`Fusion::blocks_per_multiprocessor`]; 0 where there is no fusion).
    pub fuse_blocks_per_sm: Vec<u64>,
    /// Element type of the arrays, as a profile's `[[kernels]]` names it: `double`
    /// when any array on the device is, else `float`.
    pub elem: String,
    /// Stencil shape class ([`shape_class`]): rank and widest declared halo.
    pub shape: String,
}

impl Workload {
    /// Derive a workload from a compiled program, its grid extents (outermost
    /// first, as in the `size` clause) and its step count.
    ///
    /// `skew` is the planner's per-step window shift of the mmtb schedule
    /// (`plan.skew.per_step`, which accounts for a copy sweep run as a swap).
    pub fn from_unit(unit: Unit<'_>, extents: &[u64], steps: u64) -> Result<Workload, String> {
        let p = &unit.pipeline;
        if extents.len() != p.grid.rank() {
            return Err(format!(
                "the grid has {} dimensions, {} extents given",
                p.grid.rank(),
                extents.len()
            ));
        }
        if let Some(d) = extents.iter().position(|e| *e == 0) {
            return Err(format!("extent {} of the grid is zero", d + 1));
        }
        let arrays = p
            .arrays
            .iter()
            .zip(&unit.plan.transfers)
            .zip(&unit.plan.unread)
            .enumerate()
            .map(|(i, ((a, t), unread))| ArrayLoad {
                unread: unread.is_some(),
                to_root: unit.plan.to_root(i),
                name: a.display_name(),
                elem_bytes: a.elem.bytes(),
                movement: match t {
                    Transfer::UpDown => Movement::InOut,
                    Transfer::Up => Movement::In,
                    Transfer::LastBlock => Movement::Temporary,
                    Transfer::Folded => Movement::Folded,
                    Transfer::Unused => Movement::Unused,
                },
            })
            .collect();
        // A copy sweep run as a swap costs no kernel and moves no bytes.
        let (copy_kernels, copy_bytes) = unit.plan.swap.map_or((0, 0.0), |sw| {
            let f = &unit.facts.sweeps[sw.copy];
            let elem = |a: usize| p.arrays[a].elem.bytes() as f64;
            (1, f.reads.iter().chain(&f.writes).map(|a| elem(*a)).sum())
        });
        let reach = unit.plan.step_reach;
        let h_lo = u64::try_from(reach.minus.max(0)).unwrap_or(0);
        let h_hi = u64::try_from(reach.plus.max(0)).unwrap_or(0);
        Ok(Workload {
            n: extents[0],
            plane: extents[1..].iter().product(),
            steps,
            arrays,
            h_lo,
            h_hi,
            skew: u64::try_from(unit.plan.skew.per_step.max(0)).unwrap_or(0),
            flops_per_point: f64::from(unit.facts.flops_per_point),
            bytes_per_point: f64::from(unit.facts.bytes_per_point) - copy_bytes,
            kernels_per_step: p.body.len() as u64 - copy_kernels,
            handover_below: u64::try_from(unit.plan.skew.below()).unwrap_or(0),
            upload_above: u64::try_from(unit.plan.skew.above()).unwrap_or(0),
            extra_bytes_per_point: unit.plan.swap.map_or(0, |sw| p.arrays[sw.dst].elem.bytes()),
            fuse: 1,
            fuse_max: 1,
            fuse_overhead: vec![1.0; MAX_FUSED_STEPS as usize + 1],
            strip_elem_bytes: 0,
            fuse_keep: vec![1; MAX_FUSED_STEPS as usize + 1],
            fuse_blocks_per_sm: vec![0; MAX_FUSED_STEPS as usize + 1],
            elem: elem_class(p),
            shape: shape_class(
                p.grid.rank(),
                p.halo
                    .iter()
                    .map(|h| h.minus.max(h.plus).max(0) as u64)
                    .max()
                    .unwrap_or(0),
            ),
        }
        .with_fusion(unit.plan.fusion.as_ref(), &p.arrays))
    }

    /// The workload of kernels that fuse steps as `fusion` says (`None`: a target
    /// whose kernels advance one step each).
    pub fn with_fusion(mut self, fusion: Option<&Fusion>, arrays: &[crate::ir::Array]) -> Workload {
        self.fuse = 1;
        self.fuse_max = 1;
        self.fuse_overhead = vec![1.0; MAX_FUSED_STEPS as usize + 1];
        self.strip_elem_bytes = 0;
        self.fuse_keep = vec![1; MAX_FUSED_STEPS as usize + 1];
        self.fuse_blocks_per_sm = vec![0; MAX_FUSED_STEPS as usize + 1];
        if let Some(f) = fusion {
            self.fuse = u64::from(f.default_steps);
            self.fuse_max = u64::from(f.max_steps);
            for t in 2..=f.max_steps {
                self.fuse_overhead[t as usize] = f.overhead(t);
                self.fuse_keep[t as usize] = f.keep(t);
                self.fuse_blocks_per_sm[t as usize] = u64::from(f.blocks_per_multiprocessor(t));
            }
            self.strip_elem_bytes = arrays[f.array].elem.bytes();
        }
        self
    }

    /// Bytes of one plane summed over the arrays that `pick` selects.
    pub fn plane_bytes(&self, pick: impl Fn(&ArrayLoad) -> bool) -> u128 {
        self.arrays
            .iter()
            .filter(|a| pick(a))
            .map(|a| u128::from(a.elem_bytes) * u128::from(self.plane))
            .sum()
    }

    /// Grid points (n x plane).
    pub fn points(&self) -> u128 {
        u128::from(self.n) * u128::from(self.plane)
    }
}

/// The element type a pipeline's kernels are keyed by in a profile's `[[kernels]]`:
/// `double` when any of its arrays is (the wider type sets the traffic), else `float`.
fn elem_class(p: &crate::ir::Pipeline) -> String {
    let double = p.arrays.iter().any(|a| a.elem == ElemType::Double);
    (if double { "double" } else { "float" }).to_string()
}

/// The pipeline's fusion on the machine `profile` describes: step counts whose
/// kernels need more shared memory per block than it allows are dropped and
/// the default lowered ([`Fusion::within`]); `None` where not even two fit.
pub fn fusion_on(unit: Unit<'_>, profile: &super::Profile) -> Option<Fusion> {
    unit.plan
        .fusion
        .as_ref()
        .and_then(|f| f.within(profile.shared_limit()))
}

/// Evaluate the `size` extents of a compiled program with macro values.
pub fn extents(unit: Unit<'_>, macros: &Macros) -> Result<Vec<u64>, String> {
    let p = &unit.pipeline;
    p.grid
        .dims
        .iter()
        .enumerate()
        .map(|(d, e)| {
            let v = macros.eval(&e.n).map_err(|err| {
                format!(
                    "extent {} of the size clause, `{}`, can not be evaluated: {err}",
                    d + 1,
                    e.n
                )
            })?;
            u64::try_from(v)
                .map_err(|_| format!("extent {} of the size clause, `{}`, is {v}", d + 1, e.n))
        })
        .collect()
}

/// Evaluate the time loop's trip count with macro values.
pub fn steps(unit: Unit<'_>, macros: &Macros) -> Result<u64, String> {
    let t = &unit.pipeline.time;
    // A step count the directives give stands in for a bound known only at run time.
    let v = macros
        .eval(&t.trip_count())
        .or_else(|err| match &t.steps_hint {
            Some(hint) => macros.eval(hint),
            None => Err(err),
        })
        .map_err(|err| {
            format!(
                "the time loop `{} {} {}` has a step count tpace can not evaluate ({err}); give --steps N",
                t.var,
                if t.inclusive { "<=" } else { "<" },
                t.end
            )
        })?;
    Ok(u64::try_from(v).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::compile_source;

    const JACOBI: &str = include_str!("../../examples/jacobi2d.c");
    const HEAT3D: &str = include_str!("../../examples/heat3d.c");

    #[test]
    fn jacobi_workload_from_the_ir() {
        let c = compile_source("jacobi2d.c", JACOBI).unwrap();
        let m = Macros::new(&["X=48000".into(), "Y=48000".into()], JACOBI).unwrap();
        let ext = extents(c.unit(0), &m).unwrap();
        assert_eq!(ext, vec![48000, 48000]);
        let w = Workload::from_unit(c.unit(0), &ext, 2048).unwrap();
        assert_eq!((w.n, w.plane, w.steps), (48000, 48000, 2048));
        // The copy back into `a` runs as a swap: one kernel of 8 bytes per point,
        // windows moving one plane per step.
        assert_eq!((w.h_lo, w.h_hi, w.skew), (1, 1, 1));
        assert_eq!(w.kernels_per_step, 1);
        assert_eq!(w.flops_per_point, 4.0);
        assert_eq!(w.bytes_per_point, 8.0);
        let moves: Vec<Movement> = w.arrays.iter().map(|a| a.movement).collect();
        assert_eq!(moves, vec![Movement::Folded, Movement::InOut]);
        assert!(w.arrays.iter().all(|a| a.elem_bytes == 4));
        assert_eq!((w.elem.as_str(), w.shape.as_str()), ("float", "2d-r1"));
    }

    #[test]
    fn file_defaults_and_missing_macros() {
        let c = compile_source("heat3d.c", HEAT3D).unwrap();
        let m = Macros::new(&[], HEAT3D).unwrap();
        assert_eq!(extents(c.unit(0), &m).unwrap(), vec![96, 64, 80]);
        let w = Workload::from_unit(c.unit(0), &[96, 64, 80], 40).unwrap();
        assert_eq!(w.plane, 64 * 80);
        // The time loop runs `steps` times, a variable: no value without --steps.
        let e = steps(c.unit(0), &m).unwrap_err();
        assert!(e.contains("--steps"), "{e}");
        let bare = "float a[10][10], b[10][10];\nint main(void){\n\
                    #pragma tpace pipeline targetinout(a, b) size([0:N][0:M]) halo([1:1][0:0])\n\
                    for (int t = 0; t < 4; t++) {\n#pragma tpace loop dim(2)\n\
                    for (int i = 1; i < N-1; i++) {\n#pragma tpace loop dim(1)\n\
                    for (int j = 0; j < M; j++) { b[i][j] = a[i-1][j]; }\n}\n}\n}\n";
        let c = compile_source("bare.c", bare).unwrap();
        let none = Macros::new(&[], bare).unwrap();
        let e = extents(c.unit(0), &none).unwrap_err();
        assert!(e.contains("extent 1") && e.contains("`N`"), "{e}");
        assert_eq!(steps(c.unit(0), &none).unwrap(), 4, "constant trip count");
        let set = Macros::new(&["N=7".into(), "M=3".into()], bare).unwrap();
        assert_eq!(extents(c.unit(0), &set).unwrap(), vec![7, 3]);
        let w = Workload::from_unit(c.unit(0), &[7, 3], 4).unwrap();
        assert_eq!((w.h_lo, w.h_hi), (1, 0));
        let moves: Vec<Movement> = w.arrays.iter().map(|a| a.movement).collect();
        assert_eq!(moves, vec![Movement::In, Movement::Temporary]);
    }

    #[test]
    fn wrong_extent_count_is_refused() {
        let c = compile_source("jacobi2d.c", JACOBI).unwrap();
        assert!(Workload::from_unit(c.unit(0), &[10], 1).is_err());
        assert!(Workload::from_unit(c.unit(0), &[10, 0], 1).is_err());
    }
}
