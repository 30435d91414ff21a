//! Several devices (TPACE_GPUS, MPI ranks): the cut axis is split into one slab
//! per device, each device runs the one-device plan on its slab plus the ghost
//! planes k steps read beyond it, and neighbours exchange those ghost planes
//! once per block. The choice mirrors the runtime's `tpace_plan_devices`
//! (runtime/scale.h): for every k, the one-device search on the largest slab
//! with its ghost planes, plus one exchange per block; the fastest sum wins,
//! so a larger k also buys fewer exchanges.

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
    /// Planes that device computes: its slab and its ghost planes.
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
    /// Predicted seconds of the whole run.
    pub total_s: f64,
}

/// Planes of the largest of `devices` slabs of `n` planes.
pub fn largest_slab(n: u64, devices: u64) -> u64 {
    n.div_ceil(devices.max(1))
}

/// Choose for `devices` devices of which `ranks` processes hold slabs; the
/// thinnest rank's planes bound the ghost depth (a neighbour rank holds them).
pub fn choose_devices(
    w: &Workload,
    m: &Machine,
    cap: Option<u128>,
    devices: u64,
    ranks: u64,
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
    let mut best: Option<DeviceChoice> = None;
    let mut last_err = String::from("no k fits");
    for k in k_candidates(w.steps) {
        if k > k_most {
            continue;
        }
        let planes = w.n.min(slab + k * reach);
        let wk = Workload {
            n: planes,
            ..w.clone()
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
        // Each boundary: the ghost region of k steps, shrinking by the reach per step, on both sides.
        let redundant = u128::from(reach) * u128::from(k) * u128::from(k.saturating_sub(1)) / 2
            * u128::from(w.plane);
        if best.as_ref().is_none_or(|b| total_s < b.total_s) {
            best = Some(DeviceChoice {
                devices,
                slab,
                planes,
                choice,
                exchange_s,
                exchange_bytes: 2 * bytes,
                blocks,
                redundant_points: redundant,
                total_s,
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
        let one = choose_devices(&w, &m, Some(8_000_000_000), 1, 1).unwrap();
        let two = choose_devices(&w, &m, Some(8_000_000_000), 2, 2).unwrap();
        let eight = choose_devices(&w, &m, Some(8_000_000_000), 8, 8).unwrap();
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
        let fast = choose_devices(&w, &h100(), None, 4, 4).unwrap();
        let costly = choose_devices(&w, &slow, None, 4, 4).unwrap();
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
        let c = choose_devices(&w, &h100(), None, 4, 4).unwrap();
        // 10 planes a rank and a reach of one: k at most 10.
        assert!(c.choice.best.config.k <= 10, "{:?}", c.choice.best.config);
        assert!(choose_devices(&w, &h100(), None, 64, 64).is_err());
    }
}
