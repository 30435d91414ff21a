//! Facts about a validated program: read/write sets, the halo actually used,
//! copy sweeps, pure temporaries, and work per grid point.

use super::liveness::{After, Receivers, liveness, receivers};
use crate::ir::{AccessKind, Halo, Intent, Pipeline, Program, Sweep};
use std::collections::BTreeSet;

/// What analysis learnt about one sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepFacts {
    /// Arrays read (indices into the pipeline's arrays).
    pub reads: BTreeSet<usize>,
    /// Arrays written.
    pub writes: BTreeSet<usize>,
    /// Largest read offsets along each dimension (outermost first).
    pub reach: Vec<Halo>,
    /// `Some((dst, src))` if the sweep only copies one array into another at offset 0.
    pub copy: Option<(usize, usize)>,
}

/// What analysis learnt about one listed array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayFacts {
    /// Some sweep reads it.
    pub read: bool,
    /// Some sweep writes it.
    pub written: bool,
    /// Every step writes it before reading it, and only reads it where it was written
    /// in the same step: its values never flow from one step to the next.
    pub pure_temporary: bool,
    /// What the program does with it after the pipeline ([`super::liveness`]).
    pub after: After,
    /// Under MPI, which ranks need its final values after the pipeline ([`receivers`]).
    pub receivers: Receivers,
}

/// Everything the planner and back ends need to know beyond the IR itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Per sweep, in program order.
    pub sweeps: Vec<SweepFacts>,
    /// Per listed array, in clause order.
    pub arrays: Vec<ArrayFacts>,
    /// Largest read offsets over all sweeps, per dimension.
    pub halo_used: Vec<Halo>,
    /// Floating-point operations per grid point and step.
    pub flops_per_point: u32,
    /// Bytes read plus written per grid point and step, counting each array once per sweep.
    pub bytes_per_point: u32,
}

/// Compute the facts of one validated pipeline of `program`.
pub fn facts(program: &Program, p: &Pipeline) -> Facts {
    let rank = p.grid.rank();
    let sweeps: Vec<SweepFacts> = p
        .body
        .iter()
        .map(|s| sweep_facts(s, rank, program))
        .collect();
    let mut halo_used = vec![Halo::default(); rank];
    for s in &sweeps {
        for (h, r) in halo_used.iter_mut().zip(&s.reach) {
            h.minus = h.minus.max(r.minus);
            h.plus = h.plus.max(r.plus);
        }
    }
    let after = liveness(program, p);
    // With pointers rotated, each array's storage takes every role of its cycle in turn.
    let cycle = |a: usize| -> Vec<usize> {
        match &p.rotation {
            Some(r) => {
                let mut c = vec![a];
                let mut at = r.takes[a];
                while at != a && c.len() <= p.arrays.len() {
                    c.push(at);
                    at = r.takes[at];
                }
                c
            }
            None => vec![a],
        }
    };
    let ranks = receivers(program, p);
    let arrays = (0..p.arrays.len())
        .zip(after)
        .map(|(a, after)| {
            let mine = cycle(a);
            // The storage ends named by any pointer of its cycle (by the step
            // count): every rank receives it if one of those names needs it there.
            let receivers = mine
                .iter()
                .map(|b| &ranks[*b])
                .find(|r| !r.root())
                .unwrap_or(&ranks[a])
                .clone();
            let any = |f: &dyn Fn(&SweepFacts, usize) -> bool| {
                mine.iter().any(|b| sweeps.iter().any(|s| f(s, *b)))
            };
            ArrayFacts {
                read: any(&|s, b| s.reads.contains(&b)),
                written: any(&|s, b| s.writes.contains(&b)),
                pure_temporary: mine.len() == 1
                    && p.arrays[a].intent == Intent::InOut
                    && is_pure_temporary(p, a),
                after,
                receivers,
            }
        })
        .collect();
    let elem_bytes = |a: usize| p.arrays[a].elem.bytes() as u32;
    let bytes_per_point = sweeps
        .iter()
        .map(|s| {
            s.reads
                .iter()
                .chain(&s.writes)
                .map(|a| elem_bytes(*a))
                .sum::<u32>()
        })
        .sum();
    Facts {
        sweeps,
        arrays,
        halo_used,
        flops_per_point: p.body.iter().map(|s| s.flops).sum(),
        bytes_per_point,
    }
}

fn sweep_facts(sweep: &Sweep, rank: usize, program: &Program) -> SweepFacts {
    let mut reads = BTreeSet::new();
    let mut writes = BTreeSet::new();
    let mut reach = vec![Halo::default(); rank];
    for acc in &sweep.accesses {
        match acc.kind {
            AccessKind::Read => {
                reads.insert(acc.array);
                for (r, off) in reach.iter_mut().zip(&acc.offsets) {
                    r.minus = r.minus.max(off.saturating_neg());
                    r.plus = r.plus.max(*off);
                }
            }
            AccessKind::Write => {
                writes.insert(acc.array);
            }
        }
    }
    SweepFacts {
        copy: copy_of(sweep, program),
        reads,
        writes,
        reach,
    }
}

/// `dst[x][y] = src[x][y];` and nothing else.
fn copy_of(sweep: &Sweep, program: &Program) -> Option<(usize, usize)> {
    let [first, second] = sweep.accesses.as_slice() else {
        return None;
    };
    let (w, r) = match (first.kind, second.kind) {
        (AccessKind::Write, AccessKind::Read) => (first, second),
        (AccessKind::Read, AccessKind::Write) => (second, first),
        _ => return None,
    };
    let zero = |o: &[i64]| o.iter().all(|v| *v == 0);
    if w.array == r.array || !zero(&w.offsets) || !zero(&r.offsets) {
        return None;
    }
    // The body must be exactly `dst = src;` (braces and whitespace aside).
    let src = &program.source;
    let body: String = src[sweep.body.clone()]
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '{' && *c != '}')
        .collect();
    let expected: String = format!("{}={};", &src[w.span.clone()], &src[r.span.clone()])
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    (body == expected).then_some((w.array, r.array))
}

/// The first sweep touching the array writes it at every point of its box (an
/// unconditional write: not under an `if`, `?:`, `&&` or `||`, whose skipped points
/// would keep their old values) without reading it, and every later read is at
/// offset 0 in a sweep with the same loop bounds as that write.
fn is_pure_temporary(p: &Pipeline, array: usize) -> bool {
    let body = &p.body;
    let touching: Vec<&Sweep> = body
        .iter()
        .filter(|s| s.accesses.iter().any(|a| a.array == array))
        .collect();
    let Some(first) = touching.first() else {
        return false;
    };
    let first_reads = first
        .accesses
        .iter()
        .any(|a| a.array == array && a.kind == AccessKind::Read);
    let covers_box = first
        .accesses
        .iter()
        .any(|a| a.array == array && a.kind == AccessKind::Write && a.unconditional);
    if first_reads || !covers_box {
        return false;
    }
    let bounds = |s: &Sweep| {
        let mut b: Vec<(usize, String, String)> = s
            .loops
            .iter()
            .map(|l| (l.pos, l.lo.clone(), l.hi.clone()))
            .collect();
        b.sort();
        b
    };
    touching[1..].iter().all(|s| {
        s.accesses
            .iter()
            .filter(|a| a.array == array && a.kind == AccessKind::Read)
            .all(|a| a.offsets.iter().all(|o| *o == 0) && bounds(s) == bounds(first))
    })
}
