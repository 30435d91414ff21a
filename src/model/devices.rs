//! Several devices (TPACE_GPUS, MPI ranks): the cut axis is split into one slab
//! per device, each device runs the one-device plan on its slab plus the ghost
//! planes k steps read beyond it, and neighbours exchange those ghost planes
//! once per block. The choice mirrors the runtime's `tpace_plan_devices`
//! (runtime/scale.h): for every k, the one-device search on the largest slab
//! with its ghost planes, plus one exchange per block; the fastest sum wins,
//! so a larger k also buys fewer exchanges. Devices run at once, each on its own
//! link to the host (measured on a 2-GPU H200 node, 2026-11-26: 55.5 GB/s to each
//! GPU alone, 111.0 GB/s to both at once), so the run takes what the largest slab
//! takes. Where ghost planes go device to device (`peer`), their buffers (two sets
//! per side) take device memory beside the plan, where the budget leaves room (the
//! plan does not shrink for them: otherwise they go through host memory). After the pipeline the arrays that
//! come back go to the ranks that read them (rank 0 alone, or every rank), at the
//! exchange rate: that time is part of the run's too.

use super::predict::{Machine, Schedule};
use super::search::{Choice, choose_fused, k_candidates};
use super::workload::{Movement, Workload};

/// The plan every device runs, and what the whole run costs.
#[derive(Debug, Clone)]
pub struct DeviceChoice {
    /// Devices (all ranks together).
    pub devices: u64,
    /// Planes of the largest slab.
    pub slab: u64,
    /// Planes a step of that device computes on average: its slab and half of its ghost
    /// planes ([`planes_computed`]).
    pub planes: u64,
    /// The one-device choice on those planes at the chosen k.
    pub choice: Choice,
    /// Seconds all exchanges take.
    pub exchange_s: f64,
    /// Bytes one exchange moves between two neighbours (both ways).
    pub exchange_bytes: u128,
    /// Blocks (an exchange before each but the first).
    pub blocks: u64,
    /// Redundant points per block and boundary: the ghost planes both neighbours compute.
    pub redundant_points: u128,
    /// Seconds to bring the results to the ranks that read them, after the blocks.
    pub results_s: f64,
    /// Bytes that move between ranks after the pipeline, all ranks together.
    pub results_bytes: u128,
    /// Device bytes of the ghost planes that come device to device (peer copies) where
    /// the budget leaves room for them beside the plan.
    pub ghost_bytes: u128,
    /// Predicted seconds of the whole run.
    pub total_s: f64,
}

/// Planes of each of `ranks` ranks when `n` planes are split into `devices` slabs as
/// even as can be (the runtime's `tpace_slab`), the devices in rank order.
pub fn rank_planes(n: u64, devices: u64, ranks: u64) -> Vec<u64> {
    let (base, extra) = (n / devices, n % devices);
    let local = devices / ranks;
    (0..ranks)
        .map(|q| {
            (q * local..(q + 1) * local)
                .map(|e| base + u64::from(e < extra))
                .sum()
        })
        .collect()
}

/// Bytes between ranks after the pipeline (all ranks together) and the most one rank
/// receives: each array that comes back goes to rank 0 alone (`to_root`) or to every
/// rank, whole planes of `plane` elements.
pub fn results_bytes(w: &Workload, planes: &[u64]) -> (u128, u128) {
    let ranks = planes.len() as u128;
    if ranks < 2 {
        return (0, 0);
    }
    let least = planes.iter().copied().min().unwrap_or(0);
    let (mut total, mut most) = (0u128, 0u128);
    for a in &w.arrays {
        let back = matches!(
            a.movement,
            Movement::InOut | Movement::Temporary | Movement::Folded
        );
        if !back || a.unread {
            continue;
        }
        let plane = u128::from(w.plane) * u128::from(a.elem_bytes);
        let n = u128::from(w.n);
        if a.to_root {
            total += (n - u128::from(planes[0])) * plane;
            most += (n - u128::from(planes[0])) * plane;
        } else {
            total += (ranks - 1) * n * plane;
            most += (n - u128::from(least)) * plane;
        }
    }
    (total, most)
}

/// Planes a step of the largest slab's device computes on average, which the plan
/// is chosen for: its slab and half of its ghost planes, k steps' reach on each side
/// where it has a neighbour (both for an inner slab of three devices or more, one
/// for two). The ghost region shrinks by a step's reach each step (k(k-1)/2 planes'
/// worth of steps a side, about half of k planes at every step), and its planes go in
/// but do not come back, so half of them also counts their copies (the runtime's
/// `tpace_planes_computed`).
pub fn planes_computed(w: &Workload, devices: u64, slab: u64, k: u64) -> u64 {
    let sides = match devices {
        0 | 1 => 0,
        2 => w.h_lo.max(w.h_hi),
        _ => w.h_lo + w.h_hi,
    };
    w.n.min(slab + (k * sides).div_ceil(2))
}

/// Planes of the largest of `devices` slabs of `n` planes.
pub fn largest_slab(n: u64, devices: u64) -> u64 {
    n.div_ceil(devices.max(1))
}

/// Choose for `devices` devices of which `ranks` processes hold slabs; the
/// thinnest rank's planes bound the ghost depth (a neighbour rank holds them).
/// `peer`: the devices of one process copy ghost planes into each other's memory (CUDA).
pub fn choose_devices(
    w: &Workload,
    m: &Machine,
    cap: Option<u128>,
    devices: u64,
    ranks: u64,
    peer: bool,
) -> Result<DeviceChoice, String> {
    let devices = devices.max(1);
    let ranks = ranks.clamp(1, devices);
    if w.n < devices {
        return Err(format!(
            "the grid has {} planes along the cut axis, fewer than the {devices} devices",
            w.n
        ));
    }
    let slab = largest_slab(w.n, devices);
    let reach = w.h_lo + w.h_hi;
    let deepest = w.h_lo.max(w.h_hi);
    // The thinnest rank: n split over the ranks' devices, the smallest share.
    let per_rank = devices / ranks;
    let thinnest = (w.n / devices) * per_rank;
    let k_most = if ranks > 1 && deepest > 0 {
        (thinnest / deepest).max(1)
    } else {
        u64::MAX
    };
    let exchanged: u128 = w
        .arrays
        .iter()
        .filter(|a| a.movement == Movement::InOut)
        .map(|a| u128::from(a.elem_bytes) * u128::from(w.plane))
        .sum();
    let steps = w.steps.max(1);
    // After the pipeline: the results to the ranks that read them (the runtime's
    // tpace_results_seconds: the rank that receives the most).
    let planes_of = rank_planes(w.n, devices, ranks);
    let (between, most) = results_bytes(w, &planes_of);
    let results_s = if most > 0 && m.exchange_bps > 0.0 {
        most as f64 / m.exchange_bps + m.exchange_latency_s
    } else {
        0.0
    };
    let peer = peer && devices / ranks > 1;
    let mut best: Option<DeviceChoice> = None;
    let mut last_err = String::from("no k fits");
    for k in k_candidates(w.steps) {
        if k > k_most {
            continue;
        }
        let planes = planes_computed(w, devices, slab, k);
        let wk = Workload {
            n: planes,
            ..w.clone()
        };
        // Two sets of each side's ghost planes on every device, where a later block reads them.
        let ghost_bytes = if peer && w.steps > k {
            2 * u128::from(k) * u128::from(reach) * exchanged
        } else {
            0
        };
        let choice = match choose_fused(&wk, m, cap, &[k], &[Schedule::Mm, Schedule::Mmtb]) {
            Ok(c) => c,
            Err(e) => {
                last_err = e;
                continue;
            }
        };
        let blocks = steps.div_ceil(k);
        let bytes = u128::from(k * reach) * exchanged;
        // One exchange before every block but the first, which starts from the program's data.
        let exchange_s = if devices > 1 && m.exchange_bps > 0.0 {
            (blocks - 1) as f64
                * ((k * reach) as f64 * exchanged as f64 / m.exchange_bps + m.exchange_latency_s)
        } else {
            0.0
        };
        let total_s = choice.best.total_s + exchange_s;
        let total_with_results = total_s + results_s;
        // Each boundary: the ghost region of k steps, shrinking by the reach per step, on both sides.
        let redundant = u128::from(reach) * u128::from(k) * u128::from(k.saturating_sub(1)) / 2
            * u128::from(w.plane);
        if best.as_ref().is_none_or(|b| total_with_results < b.total_s) {
            best = Some(DeviceChoice {
                devices,
                slab,
                planes,
                choice,
                exchange_s,
                exchange_bytes: 2 * bytes,
                blocks,
                redundant_points: redundant,
                results_s,
                results_bytes: between,
                ghost_bytes,
                total_s: total_with_results,
            });
        }
    }
    best.ok_or(last_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::predict::tests::{h100, jacobi};

    #[test]
    fn more_devices_are_faster_until_the_exchanges_dominate() {
        let w = jacobi(98_304, 122_880, 128);
        let m = h100();
        let one = choose_devices(&w, &m, Some(8_000_000_000), 1, 1, false).unwrap();
        let two = choose_devices(&w, &m, Some(8_000_000_000), 2, 2, false).unwrap();
        let eight = choose_devices(&w, &m, Some(8_000_000_000), 8, 8, false).unwrap();
        assert!(two.total_s < one.total_s, "{} {}", two.total_s, one.total_s);
        assert!(eight.total_s < two.total_s);
        // One device exchanges nothing.
        assert_eq!(one.exchange_s, 0.0);
        assert!(two.exchange_s > 0.0 || two.blocks == 1);
        assert_eq!(two.slab, 49_152);
        assert!(two.planes > two.slab && two.planes <= 98_304);
    }

    #[test]
    fn a_larger_k_is_worth_fewer_exchanges() {
        let w = jacobi(16_384, 16_384, 512);
        let mut slow = h100();
        slow.exchange_bps = 1e8; // a slow link: exchanges dominate
        slow.exchange_latency_s = 1e-3;
        let fast = choose_devices(&w, &h100(), None, 4, 4, false).unwrap();
        let costly = choose_devices(&w, &slow, None, 4, 4, false).unwrap();
        assert!(
            costly.blocks <= fast.blocks,
            "{} {}",
            costly.blocks,
            fast.blocks
        );
    }

    #[test]
    fn ghost_depth_is_bounded_by_the_thinnest_rank() {
        let w = jacobi(40, 1000, 64);
        let c = choose_devices(&w, &h100(), None, 4, 4, false).unwrap();
        // 10 planes a rank and a reach of one: k at most 10.
        assert!(c.choice.best.config.k <= 10, "{:?}", c.choice.best.config);
        assert!(choose_devices(&w, &h100(), None, 64, 64, false).is_err());
    }
}
