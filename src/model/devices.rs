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
//! plan does not shrink for them: otherwise they go through host memory). The arrays that
//! come back go to the ranks that read them (rank 0 alone, or every rank), at the
//! exchange rate: those only output reads go to rank 0 as the last block's chunks
//! finish, so only what the last block leaves (its last chunks, or what the rate cannot
//! move in its time) comes after the blocks; the others go after the blocks. That time
//! is part of the run's too.

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
    /// Seconds to bring the results to the ranks that read them, after the blocks
    /// ([`results_seconds`]).
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

/// What moves between ranks at the pipeline's end (whole planes of `plane` elements).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ResultsBytes {
    /// All ranks together: each array that comes back goes to rank 0 alone (`to_root`)
    /// or to every rank.
    pub between: u128,
    /// What rank 0 receives as the last block's chunks finish: the arrays only output
    /// reads that the last block downloads (the runtime's `tpace_early`).
    pub early: u128,
    /// ... their bytes per plane.
    pub early_plane: u128,
    /// The most one rank receives after the blocks: the other arrays.
    pub after: u128,
}

/// The bytes between ranks at the pipeline's end, `planes` the planes of each rank.
pub fn results_bytes(w: &Workload, planes: &[u64]) -> ResultsBytes {
    let ranks = planes.len() as u128;
    let mut r = ResultsBytes::default();
    if ranks < 2 {
        return r;
    }
    let least = planes.iter().copied().min().unwrap_or(0);
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
            r.between += (n - u128::from(planes[0])) * plane;
            if a.movement == Movement::Folded {
                // Its faces are put back after the blocks: it goes after them.
                r.after += (n - u128::from(planes[0])) * plane;
            } else {
                r.early += (n - u128::from(planes[0])) * plane;
                r.early_plane += plane;
            }
        } else {
            r.between += (ranks - 1) * n * plane;
            r.after += (n - u128::from(least)) * plane;
        }
    }
    r
}

/// Seconds the results take after the blocks, at the exchange rate (the runtime's
/// `tpace_results_seconds`). Those that go early move while the last block runs
/// (`last_block_s`), each chunk's planes once it is final: what stays after the blocks
/// is the last chunks of the other ranks' devices (`tail_planes`), or what the rate
/// cannot move within the last block, whichever is more. The others move after the
/// blocks, the rank that receives the most setting the time.
pub fn results_seconds(r: &ResultsBytes, m: &Machine, last_block_s: f64, tail_planes: u128) -> f64 {
    if m.exchange_bps <= 0.0 {
        return 0.0;
    }
    let mut s = 0.0;
    if r.early > 0 {
        let tail = (tail_planes * r.early_plane).min(r.early) as f64;
        s += (tail.max(r.early as f64 - last_block_s * m.exchange_bps)) / m.exchange_bps
            + m.exchange_latency_s;
    }
    if r.after > 0 {
        s += r.after as f64 / m.exchange_bps + m.exchange_latency_s;
    }
    s
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

/// The machine each of `devices` devices of one node sees: their copies share the
/// host's memory (`host_memory_bps`, both ways, all devices together), so where they
/// would together ask more than it gives, each device's link rates shrink alike (the
/// runtime's `tpace_model_share_host`). Measured on a lent node of four H100s
/// (2026-11-26): each GPU's uploads at 24 GB/s and downloads at 27 GB/s with all four
/// copying, against 44 and 47 GB/s for one alone; two of them at 36 and 47.
pub fn sharing_host(m: &Machine, devices: u64) -> Machine {
    let mut shared = m.clone();
    let each = m.duplex_bps.unwrap_or(m.h2d_bps + m.d2h_bps);
    let asked = devices as f64 * each;
    if m.host_memory_bps > 0.0 && asked > m.host_memory_bps {
        let share = m.host_memory_bps / asked;
        shared.h2d_bps *= share;
        shared.d2h_bps *= share;
        shared.duplex_bps = m.duplex_bps.map(|d| d * share);
    }
    shared
}

/// Planes of the largest of `devices` slabs of `n` planes.
pub fn largest_slab(n: u64, devices: u64) -> u64 {
    n.div_ceil(devices.max(1))
}

/// Choose for `devices` devices of which `ranks` processes hold slabs; the
/// thinnest rank's planes bound the ghost depth (a neighbour rank holds them).
/// `node_devices` of them share a node, whose host memory their copies share
/// ([`sharing_host`]). `peer`: the devices of one process copy ghost planes into each
/// other's memory (CUDA).
pub fn choose_devices(
    w: &Workload,
    m: &Machine,
    cap: Option<u128>,
    devices: u64,
    ranks: u64,
    node_devices: u64,
    peer: bool,
) -> Result<DeviceChoice, String> {
    let devices = devices.max(1);
    let ranks = ranks.clamp(1, devices);
    let m = &sharing_host(m, node_devices.clamp(1, devices));
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
    // The results to the ranks that read them (results_seconds).
    let planes_of = rank_planes(w.n, devices, ranks);
    let results = results_bytes(w, &planes_of);
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
        // The last block's share of the run, and the last chunk of every device but rank 0's.
        let last_steps = steps - (blocks - 1) * k.min(steps);
        let last_block_s = choice.best.total_s * last_steps as f64 / steps as f64;
        let tail_planes =
            u128::from(choice.best.config.b.min(slab)) * u128::from(devices - devices / ranks);
        let results_s = results_seconds(&results, m, last_block_s, tail_planes);
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
                results_bytes: results.between,
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
        let one = choose_devices(&w, &m, Some(8_000_000_000), 1, 1, 1, false).unwrap();
        let two = choose_devices(&w, &m, Some(8_000_000_000), 2, 2, 1, false).unwrap();
        let eight = choose_devices(&w, &m, Some(8_000_000_000), 8, 8, 1, false).unwrap();
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
        let fast = choose_devices(&w, &h100(), None, 4, 4, 1, false).unwrap();
        let costly = choose_devices(&w, &slow, None, 4, 4, 1, false).unwrap();
        assert!(
            costly.blocks <= fast.blocks,
            "{} {}",
            costly.blocks,
            fast.blocks
        );
    }

    #[test]
    fn results_only_output_reads_are_priced_by_what_the_last_block_leaves() {
        // Jacobi-2D 49152 x 61440 over 2 ranks: `a` only printed (to rank 0, early).
        let mut w = jacobi(49_152, 61_440, 128);
        w.arrays[0].unread = true;
        w.arrays[1].to_root = true;
        let m = h100();
        let c = choose_devices(&w, &m, Some(8_000_000_000), 2, 2, 1, false).unwrap();
        let planes = rank_planes(w.n, 2, 2);
        let r = results_bytes(&w, &planes);
        assert_eq!(r.early, 24_576 * 61_440 * 4);
        assert_eq!(r.after, 0);
        assert_eq!(r.between, r.early);
        // Less than moving the slab after the blocks, at least the last chunk's planes.
        let whole = r.early as f64 / m.exchange_bps + m.exchange_latency_s;
        assert!(c.results_s < whole, "{} {whole}", c.results_s);
        let b = c.choice.best.config.b.min(c.slab);
        let tail = (u128::from(b) * r.early_plane) as f64 / m.exchange_bps;
        assert!(c.results_s >= tail, "{} {tail}", c.results_s);
        // No time in the last block to move them: all of them after it.
        assert_eq!(results_seconds(&r, &m, 0.0, 1), whole);
        // Printed and read by every rank alike (not only output): after the blocks.
        w.arrays[1].to_root = false;
        let every = results_bytes(&w, &planes);
        assert_eq!((every.early, every.after), (0, r.early));
        assert_eq!(results_seconds(&every, &m, 1e9, 1), whole);
    }

    #[test]
    fn the_devices_of_a_node_share_its_host_memory() {
        let mut m = h100();
        m.duplex_bps = Some(88.25e9);
        m.host_memory_bps = 200e9;
        // Two devices ask 176.5 GB/s of 200: their links stay as they are.
        assert_eq!(sharing_host(&m, 2), m);
        // Four ask 353: each gets 200/353 of its links, both ways alike.
        let four = sharing_host(&m, 4);
        let share = 200e9 / (4.0 * 88.25e9);
        assert!((four.h2d_bps - m.h2d_bps * share).abs() < 1.0);
        assert!((four.d2h_bps - m.d2h_bps * share).abs() < 1.0);
        assert!((four.duplex_bps.unwrap() - 50e9).abs() < 1.0);
        // Unknown (0): every link its own.
        m.host_memory_bps = 0.0;
        assert_eq!(sharing_host(&m, 64), m);
        // A plan over 4 devices of one node costs more than over 4 nodes' devices.
        m.host_memory_bps = 200e9;
        let w = jacobi(49_152, 61_440, 128);
        let spread = choose_devices(&w, &m, Some(8_000_000_000), 4, 1, 1, false).unwrap();
        let node = choose_devices(&w, &m, Some(8_000_000_000), 4, 1, 4, false).unwrap();
        assert!(
            node.total_s > spread.total_s,
            "{} {}",
            node.total_s,
            spread.total_s
        );
    }

    #[test]
    fn ghost_depth_is_bounded_by_the_thinnest_rank() {
        let w = jacobi(40, 1000, 64);
        let c = choose_devices(&w, &h100(), None, 4, 4, 1, false).unwrap();
        // 10 planes a rank and a reach of one: k at most 10.
        assert!(c.choice.best.config.k <= 10, "{:?}", c.choice.best.config);
        assert!(choose_devices(&w, &h100(), None, 64, 64, 1, false).is_err());
    }
}
