//! The evolution-vector algorithm of the stencil-directives paper (§3.1-§3.3
//! and the appendix pseudo-code): choose the work-group (thread-block) shape
//! (W, H, D) and the on-chip temporal block size T from static information
//! only — the system B/F ratio, the on-chip memory a tile may fill, and the
//! fewest work groups a launch should have.
//!
//! The parameter vector `pv = (x, y, z, t)` starts at (1, 1, 1, 1), the
//! evolution vector `ev` at all ones. Each round proposes one change
//! (rules below); if the proposal passes the checks it becomes `pv`,
//! otherwise the direction it grew in is switched off in `ev`. The search
//! ends when no direction is left.
//!
//! The pseudo-code leaves some things open; this implementation reads them
//! as follows, and with these readings reproduces the paper's own choices in
//! Table 6 for both of its devices (see the tests):
//!
//! * **Memory-bound means `BF_alg > BF_sys`** (§3.2: T grows "while the
//!   algorithm's B/F exceeds the system's"). The appendix writes both
//!   comparisons the other way round, which would stop every search at once.
//! * **B/F under temporal blocking.** Eq. (1) gives `BF_1 = N_array x
//!   element / N_op` for T = 1. For a block of T steps the data per work item
//!   and step is divided by T, and the operations per work item are those of
//!   the whole block, redundant points included:
//!   `BF(T) = BF_1 x |WG| / (T x sum_{i<T} |WG widened by r (T-1-i)|)`.
//! * **Tile size** (Fig. 3): the region a work group holds over a block, the
//!   group widened by the halo for each step still to come, summed over the
//!   steps: `tile_arrays x element x sum_{j=1..T} prod_d (w_d + 2 r_d j)`. The
//!   halo is the whole kernel's access region, applied to every array (§3.2:
//!   "the halo follows from the region each grid-point computation accesses").
//! * **Work items** are the points the calc loops visit (the interior,
//!   `extent - 2 r` per dimension); the number of work groups is work items
//!   over group size, compared with the lower bound as a real number.
//! * **Checks in order**: the group must fit the grid (no dimension larger
//!   than the extent), then the device's largest group, then the tile, then
//!   B/F, then the number of groups. The order matters only for the Xeon Phi
//!   rule below, which asks why x stopped.
//! * **Grids of fewer than three dimensions**: the missing directions start
//!   switched off; the pseudo-code's "z" is the outermost dimension the grid
//!   has (so a 2-D grid grows y where a 3-D grid alternates y and z, and a
//!   1-D grid grows x), and the search stops when no rule applies.
//! * **Xeon Phi, y and z** (§3.3): they grow only once x has been stopped
//!   because the tile no longer fits on chip; x stopped by the grid's extent
//!   ends the search.

use super::profile::{Arch, Profile};
use crate::plan::Transfer;
use crate::plan::Unit;

/// The machine side of the algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct EvolutionMachine {
    /// Which growth rule applies.
    pub arch: Arch,
    /// System B/F: memory bytes per second over flops per second (BF_sys).
    pub bytes_per_flop: f64,
    /// On-chip bytes one work group's tile may fill (S_cache).
    pub tile_bytes: u64,
    /// Fewest work groups a launch should have (N_wg).
    pub min_groups: u64,
    /// Most work items per group, if the device limits it.
    pub max_group_size: Option<u64>,
    /// Bytes per second a one-step kernel streams (`stencil_gbs`, else `memory_gbs`), if known.
    pub stream_bps: Option<f64>,
    /// Seconds a tiled kernel spends per point it computes in local memory, barriers
    /// included (`tile_point_ps`), if known: the price of T > 1 ([`super::opencl`]).
    pub tile_point_s: Option<f64>,
}

impl EvolutionMachine {
    /// The algorithm's figures from a profile; says which are missing.
    pub fn from_profile(p: &Profile) -> Result<EvolutionMachine, String> {
        let bf = p.bytes_per_flop.as_ref().map(|f| f.value).or_else(|| {
            match (&p.memory_gbs, &p.peak_gflops) {
                (Some(m), Some(f)) => Some(m.value / f.value),
                _ => None,
            }
        });
        let mut missing = Vec::new();
        if bf.is_none() {
            missing.push("bytes_per_flop (or memory_gbs and peak_gflops)");
        }
        if p.tile_bytes.is_none() {
            missing.push("tile_bytes");
        }
        if p.min_work_groups.is_none() {
            missing.push("min_work_groups");
        }
        if !missing.is_empty() {
            return Err(format!(
                "machine profile `{}` lacks {}, which the evolution-vector algorithm needs",
                p.name,
                missing.join(", ")
            ));
        }
        let whole = |f: &Option<super::profile::Figure>| f.as_ref().map(|f| f.value as u64);
        Ok(EvolutionMachine {
            arch: p.arch,
            bytes_per_flop: bf.expect("checked"),
            tile_bytes: whole(&p.tile_bytes).expect("checked"),
            min_groups: whole(&p.min_work_groups).expect("checked"),
            max_group_size: whole(&p.max_work_group_size),
            stream_bps: p
                .stencil_gbs
                .as_ref()
                .or(p.memory_gbs.as_ref())
                .map(|f| f.value * 1e9),
            tile_point_s: p.tile_point_ps.as_ref().map(|f| f.value * 1e-12),
        })
    }

    /// The one-step kernels' stream rate the priced choice uses, bytes a second: 0 where
    /// the profile has no tile cost (`tile_point_s`), which leaves the paper's choice.
    pub fn priced_stream_bps(&self) -> f64 {
        self.stream_bps
            .filter(|_| self.tile_point_s.is_some())
            .unwrap_or(0.0)
    }
}

/// The stencil side of the algorithm. Dimensions are listed x first (x the
/// innermost, fastest-varying index), at most three.
#[derive(Debug, Clone, PartialEq)]
pub struct StencilShape {
    /// Grid extent per dimension, x first.
    pub extents: Vec<u64>,
    /// Halo radius per dimension (largest offset either way), x first.
    pub radius: Vec<u64>,
    /// Arrays the kernel accesses (N_array of Eq. (1)).
    pub arrays: u64,
    /// Arrays a tile holds per point (usually `arrays`).
    pub tile_arrays: u64,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// Floating-point operations per point and step (N_op).
    pub flops: u64,
}

impl StencilShape {
    /// The shape of a compiled program for its extents (outermost first, as
    /// in the `size` clause).
    pub fn from_unit(unit: Unit<'_>, extents: &[u64]) -> Result<StencilShape, String> {
        let rank = extents.len();
        if !(1..=3).contains(&rank) {
            return Err(format!(
                "the evolution-vector algorithm handles 1 to 3 dimensions, not {rank}"
            ));
        }
        let p = &unit.pipeline;
        let used: Vec<_> = p
            .arrays
            .iter()
            .zip(&unit.plan.transfers)
            .filter(|(_, t)| **t != Transfer::Unused)
            .map(|(a, _)| a)
            .collect();
        let elem_bytes = used.iter().map(|a| a.elem.bytes()).max().unwrap_or(4);
        Ok(StencilShape {
            extents: extents.iter().rev().copied().collect(),
            radius: unit
                .facts
                .halo_used
                .iter()
                .rev()
                .map(|h| h.minus.max(h.plus).max(0) as u64)
                .collect(),
            arrays: used.len() as u64,
            tile_arrays: used.len() as u64,
            elem_bytes,
            flops: u64::from(unit.facts.flops_per_point),
        })
    }

    /// B/F of Eq. (1) for one step: bytes of every array per point over operations.
    pub fn bf1(&self) -> f64 {
        (self.arrays * self.elem_bytes) as f64 / self.flops.max(1) as f64
    }

    /// Dimensions of the grid, at most three.
    pub fn rank(&self) -> usize {
        self.extents.len().min(3)
    }

    fn r(&self, d: usize) -> u64 {
        self.radius.get(d).copied().unwrap_or(0)
    }

    /// Points of the group `pv` widened by `steps` halos.
    pub fn widened(&self, pv: &Params, steps: u64) -> u128 {
        (0..3)
            .map(|d| u128::from(pv.group[d] + 2 * self.r(d) * steps))
            .product()
    }

    /// Algorithm B/F for a block of `pv.t` steps (see the module comment).
    pub fn bf(&self, pv: &Params) -> f64 {
        let t = pv.t.max(1);
        let computed: u128 = (0..t).map(|left| self.widened(pv, left)).sum();
        self.bf1() * pv.size() as f64 / (t as f64 * computed as f64)
    }

    /// Bytes of the tile a group holds over a block (see the module comment).
    pub fn tile_bytes(&self, pv: &Params) -> u128 {
        let points: u128 = (1..=pv.t.max(1)).map(|j| self.widened(pv, j)).sum();
        points * u128::from(self.tile_arrays * self.elem_bytes)
    }

    /// Work groups a launch has: interior points over group size.
    pub fn groups(&self, pv: &Params) -> f64 {
        let items: f64 = (0..self.rank())
            .map(|d| self.extents[d].saturating_sub(2 * self.r(d)) as f64)
            .product();
        items / pv.size() as f64
    }
}

/// A parameter vector: group shape (x, y, z) and temporal block size t.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Work-group size along x, y, z.
    pub group: [u64; 3],
    /// Time steps per on-chip block.
    pub t: u64,
}

impl Params {
    /// Work items per group.
    pub fn size(&self) -> u64 {
        self.group.iter().product()
    }

    /// As the paper writes it: (x, y, z, t).
    pub fn tuple(&self) -> (u64, u64, u64, u64) {
        (self.group[0], self.group[1], self.group[2], self.t)
    }
}

/// Why a proposal was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    /// More time steps than the kernels can advance in one launch (the limit).
    StepLimit(u64),
    /// A group dimension exceeds the grid's extent.
    BeyondGrid,
    /// More work items than the device allows in one group.
    GroupTooLarge,
    /// The tile does not fit on chip (bytes needed).
    TileTooBig(u128),
    /// The kernel would be compute-bound (its B/F).
    ComputeBound(f64),
    /// Too few work groups (how many).
    TooFewGroups(f64),
}

/// One round of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// The proposal.
    pub tried: Params,
    /// Why it was refused, or None when it was taken.
    pub refused: Option<Refusal>,
}

/// The result: the chosen parameters and how the search got there.
#[derive(Debug, Clone, PartialEq)]
pub struct Evolution {
    /// The chosen work-group shape and temporal block size.
    pub params: Params,
    /// Every proposal in order.
    pub rounds: Vec<Round>,
}

const X: usize = 0;
const Y: usize = 1;
const T: usize = 3;

/// Run the algorithm.
pub fn evolve(m: &EvolutionMachine, s: &StencilShape) -> Evolution {
    evolve_up_to(m, s, None)
}

/// Run the algorithm for kernels that advance at most `max_t` steps per launch
/// (`None`: no limit, the paper's setting). A proposal beyond the limit is
/// refused like any other ([`Refusal::StepLimit`]), which switches t off.
pub fn evolve_up_to(m: &EvolutionMachine, s: &StencilShape, max_t: Option<u64>) -> Evolution {
    let rank = s.rank().max(1);
    let z = rank - 1; // the pseudo-code's "z": the outermost dimension there is
    let y = (rank >= 2).then_some(Y);
    let mut pv = Params {
        group: [1, 1, 1],
        t: 1,
    };
    let mut ev = [true; 4];
    for e in ev.iter_mut().take(3).skip(rank) {
        *e = false;
    }
    let mut yz_open = m.arch == Arch::Gpu;
    let mut rounds = Vec::new();
    while ev.iter().any(|e| *e) {
        let dir = if ev[X] && pv.group[X] < 32 {
            Some((X, 32))
        } else if ev[T] && s.bf(&pv) > m.bytes_per_flop {
            Some((T, pv.t + 1))
        } else if ev[X] && (m.arch == Arch::XeonPhi || pv.group[X] == pv.group[z]) {
            Some((X, pv.group[X] * 2))
        } else if let Some(y) = y.filter(|&y| yz_open && ev[y] && pv.group[y] == pv.group[z]) {
            Some((y, pv.group[y] * 2))
        } else if yz_open && ev[z] {
            Some((z, pv.group[z] * 2))
        } else {
            None
        };
        let Some((d, value)) = dir else { break };
        let mut tried = pv;
        if d == T {
            tried.t = value;
        } else {
            tried.group[d] = value;
        }
        let refused = match max_t {
            Some(max) if tried.t > max => Some(Refusal::StepLimit(max)),
            _ => check(m, s, &tried),
        };
        match refused {
            None => pv = tried,
            Some(why) => {
                ev[d] = false;
                if d == X && matches!(why, Refusal::TileTooBig(_)) {
                    yz_open = true;
                }
            }
        }
        rounds.push(Round { tried, refused });
    }
    Evolution { params: pv, rounds }
}

/// The paper's check_condition, in the order the module comment gives.
fn check(m: &EvolutionMachine, s: &StencilShape, p: &Params) -> Option<Refusal> {
    if (0..s.rank()).any(|d| p.group[d] > s.extents[d]) {
        return Some(Refusal::BeyondGrid);
    }
    if m.max_group_size.is_some_and(|max| p.size() > max) {
        return Some(Refusal::GroupTooLarge);
    }
    let tile = s.tile_bytes(p);
    if tile > u128::from(m.tile_bytes) {
        return Some(Refusal::TileTooBig(tile));
    }
    let bf = s.bf(p);
    if bf < m.bytes_per_flop {
        return Some(Refusal::ComputeBound(bf));
    }
    let groups = s.groups(p);
    if groups < m.min_groups as f64 {
        return Some(Refusal::TooFewGroups(groups));
    }
    None
}

#[cfg(test)]
mod tests;
