//! Time skewing for the redundancy-free `mmtb` schedule.
//!
//! Chunks are processed in order along the cut axis. At step `i` of a block,
//! sweep `s` of chunk `c` computes the planes `[own_lo(c) - σ, own_hi(c) - σ)`
//! with `σ = i·skew + tau[s]` (the first chunk starts at the grid's first
//! plane, the last one ends at its last). Every plane is computed once per
//! step. The skews are the smallest that keep sequential semantics when all
//! chunks share one copy of every array (each chunk's buffer inherits the
//! planes below it from its predecessor):
//!
//! * read after write: a sweep that reads an array at offset `+d` runs at
//!   least `d` planes behind every earlier writer of that array;
//! * write after read: a writer of an array runs at least `d` planes behind
//!   every earlier sweep that reads the array at offset `-d`, so the values
//!   that sweep still needs from below are not yet overwritten;
//! * write after write: later writers of an array never run ahead of earlier ones.
//!
//! "Earlier" is in sequential order; a constraint between a sweep and a sweep
//! of the next step adds one `skew` to the later side.

use super::Swap;
use crate::ir::{AccessKind, Pipeline};

/// How far, along the cut axis, each sweep's window trails the chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skew {
    /// Planes every window moves down per time step.
    pub per_step: i64,
    /// Per sweep, planes its window trails the step's first sweep (`tau`).
    pub sweep: Vec<i64>,
    /// Per sweep, the largest read offset below (`-min offset`, at least 0) along the cut axis.
    pub reach_below: Vec<i64>,
    /// Per sweep, the largest read offset above (at least 0) along the cut axis.
    pub reach_above: Vec<i64>,
}

impl Skew {
    /// Planes below a chunk its successor needs from it after a block of `kb`
    /// steps: the lowest plane any sweep reads or writes, relative to the chunk's
    /// own first plane, is `(kb - 1)·skew + below()` planes down.
    pub fn below(&self) -> i64 {
        self.sweep
            .iter()
            .zip(&self.reach_below)
            .map(|(t, r)| t + r)
            .max()
            .unwrap_or(0)
    }

    /// Planes above a chunk it must upload besides its own: reads of values
    /// that no sweep of the block has written yet.
    pub fn above(&self) -> i64 {
        self.sweep
            .iter()
            .zip(&self.reach_above)
            .map(|(t, r)| (r - t).max(0))
            .max()
            .unwrap_or(0)
    }
}

/// Per sweep and array: cut-axis read offsets (min, max) and whether it writes the array.
struct Use {
    reads: Option<(i64, i64)>,
    writes: bool,
}

fn uses(p: &Pipeline) -> Vec<Vec<Use>> {
    p.body
        .iter()
        .map(|sweep| {
            (0..p.arrays.len())
                .map(|a| {
                    let mut u = Use {
                        reads: None,
                        writes: false,
                    };
                    for acc in sweep.accesses.iter().filter(|x| x.array == a) {
                        match acc.kind {
                            AccessKind::Write => u.writes = true,
                            AccessKind::Read => {
                                let o = acc.offsets[0];
                                u.reads =
                                    Some(u.reads.map_or((o, o), |(lo, hi)| (lo.min(o), hi.max(o))));
                            }
                        }
                    }
                    u
                })
                .collect()
        })
        .collect()
}

/// Planes a sweep `later` must trail a sweep `earlier` that runs before it in
/// sequential order, over every array both touch; `None` if they share nothing.
fn lag(earlier: &[Use], later: &[Use]) -> Option<i64> {
    earlier
        .iter()
        .zip(later)
        .filter_map(|(e, l)| {
            let raw = (e.writes).then_some(l.reads.map(|(_, hi)| hi)).flatten();
            let war = (l.writes).then_some(e.reads.map(|(lo, _)| -lo)).flatten();
            let waw = (e.writes && l.writes).then_some(0);
            [raw, war, waw].into_iter().flatten().max()
        })
        .max()
}

/// The smallest skews that keep sequential semantics (see the module docs).
///
/// With a `swap`, every step writes the copy's destination into its second
/// buffer instead of running the copy: across a step boundary the writer, not the
/// copy, is what writes the destination, and the temporary is not written at all.
/// Within a step the constraints stay those of the program as written: the copy
/// never runs, so its trail only makes the executor's `max_tau` (where one chunk's
/// finished planes end and the next one's begin) more cautious than it must be.
pub fn skew(p: &Pipeline, swap: Option<Swap>) -> Skew {
    let u = uses(p);
    let sweeps = u.len();
    // Within one step every constraint points from an earlier sweep to a later
    // one, so one pass in program order finds the longest paths.
    let mut tau = vec![0i64; sweeps];
    for later in 0..sweeps {
        for earlier in 0..later {
            if let Some(need) = lag(&u[earlier], &u[later]) {
                tau[later] = tau[later].max(tau[earlier] + need);
            }
        }
    }
    // Across a step boundary: sweep `earlier` of step i before sweep `later` of step i + 1.
    let mut across = uses(p);
    if let Some(sw) = swap {
        for x in &mut across[sw.copy] {
            *x = Use {
                reads: None,
                writes: false,
            };
        }
        across[sw.writer][sw.tmp].writes = false;
        across[sw.writer][sw.dst].writes = true;
    }
    // With pointers rotated, what step i + d calls array b is the storage step i
    // called takes^d(b): constraints reach as many steps ahead as the rotation's
    // period (beyond it they repeat, weaker by the skews in between).
    let period = p.rotation.as_ref().map_or(1, |r| r.period());
    let mut per_step = 0i64;
    for d in 1..=period {
        let ahead: Vec<Vec<Use>> = across
            .iter()
            .map(|row| {
                let mut moved: Vec<Use> = (0..row.len())
                    .map(|_| Use {
                        reads: None,
                        writes: false,
                    })
                    .collect();
                for (b, u) in row.iter().enumerate() {
                    let a = p.rotation.as_ref().map_or(b, |r| r.after(d, b));
                    moved[a] = Use {
                        reads: u.reads,
                        writes: u.writes,
                    };
                }
                moved
            })
            .collect();
        let steps = d as i64;
        for earlier in 0..sweeps {
            for later in 0..sweeps {
                if let Some(need) = lag(&across[earlier], &ahead[later]) {
                    let gap = tau[earlier] + need - tau[later];
                    // d steps of skew must cover the gap: the smallest skew that does.
                    per_step = per_step.max((gap + steps - 1).div_euclid(steps));
                }
            }
        }
    }
    let reach = |f: fn((i64, i64)) -> i64| -> Vec<i64> {
        u.iter()
            .map(|row| {
                row.iter()
                    .filter_map(|x| x.reads.map(f))
                    .max()
                    .unwrap_or(0)
                    .max(0)
            })
            .collect()
    };
    Skew {
        per_step,
        sweep: tau,
        reach_below: reach(|(lo, _)| -lo),
        reach_above: reach(|(_, hi)| hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::compile_source;

    /// A 2-D program's pipeline whose time loop body is `body`, arrays a, b, c of X x Y floats.
    fn program(body: &str) -> Pipeline {
        let source = format!(
            "#define X 40\n#define Y 8\nstatic float a[X][Y], b[X][Y], c[X][Y];\n\
             int main(void) {{\n  int n, x, y;\n\
             #pragma tpace pipeline targetinout(a, b, c) size([0:X][0:Y]) halo([2:2][1:1])\n\
             for (n = 0; n < 5; n++) {{\n{body}\n}}\n  return 0;\n}}\n"
        );
        compile_source("t.c", &source)
            .unwrap_or_else(|d| panic!("{d:?}"))
            .program
            .pipelines
            .remove(0)
    }

    fn sweep(dst: &str, rhs: &str) -> String {
        format!(
            "#pragma tpace loop dim(2)\nfor (x = 2; x < X - 2; x++) {{\n\
             #pragma tpace loop dim(1)\nfor (y = 1; y < Y - 1; y++) {{ {dst}[x][y] = {rhs}; }} }}\n"
        )
    }

    #[test]
    fn jacobi_with_a_copy_sweep_trails_one_plane_and_moves_two_per_step() {
        let p = program(&(sweep("b", "a[x-1][y] + a[x+1][y]") + &sweep("a", "b[x][y]")));
        let s = skew(&p, None);
        // The copy must not overwrite a plane the next chunk still reads below
        // (write after read: +1), and the next step reads a one plane above (+1).
        assert_eq!(s.sweep, [0, 1]);
        assert_eq!(s.per_step, 2);
        assert_eq!((s.below(), s.above()), (1, 1));
    }

    #[test]
    fn a_copy_run_as_a_swap_moves_one_plane_per_step() {
        let p = program(&(sweep("b", "a[x-1][y] + a[x+1][y]") + &sweep("a", "b[x][y]")));
        let swap = Some(Swap {
            writer: 0,
            copy: 1,
            dst: 0,
            tmp: 1,
        });
        let s = skew(&p, swap);
        // Within a step the copy trails the writer as written; between steps the
        // writer alternates buffers, so only its own reach of one plane counts.
        assert_eq!(s.sweep, [0, 1]);
        assert_eq!(s.per_step, 1);
    }

    #[test]
    fn an_in_place_update_moves_by_its_upper_reach() {
        // b = f(a); a = g(a, b): a is read at +2 below its own writer in the next step.
        let p = program(&(sweep("b", "a[x+2][y] + a[x][y]") + &sweep("a", "a[x][y] * b[x][y]")));
        let s = skew(&p, None);
        assert_eq!(s.sweep, [0, 0]);
        assert_eq!(s.per_step, 2);
        assert_eq!((s.below(), s.above()), (0, 2));
    }

    /// A 2-D program whose time loop runs `body` and then `rotate` (pointer
    /// exchanges of a, b, c, pointers to rows).
    fn rotated(body: &str, rotate: &str) -> Pipeline {
        let source = format!(
            "#define X 40\n#define Y 8\n\
             int main(void) {{\n  int n, x, y;\n  float (*a)[Y] = 0, (*b)[Y] = 0, (*c)[Y] = 0;\n\
             #pragma tpace pipeline targetinout(a, b, c) size([0:X][0:Y]) halo([2:2][1:1])\n\
             for (n = 0; n < 5; n++) {{\n{body}\n{rotate}\n}}\n  return 0;\n}}\n"
        );
        compile_source("t.c", &source)
            .unwrap_or_else(|d| panic!("{d:?}"))
            .program
            .pipelines
            .remove(0)
    }

    #[test]
    fn a_pointer_swap_carries_the_reach_to_the_next_step() {
        // b = f(a) then a and b swap: the next step reads, as a, what this one wrote
        // as b, one plane above: the windows move one plane a step.
        let p = rotated(
            &sweep("b", "a[x-1][y] + a[x+1][y]"),
            "{ float (*t)[Y] = a; a = b; b = t; }",
        );
        assert_eq!(
            p.rotation.as_ref().map(|r| r.takes.clone()),
            Some(vec![1, 0, 2])
        );
        let s = skew(&p, None);
        assert_eq!((s.sweep.clone(), s.per_step), (vec![0], 1));
        // Without the swap nothing flows from step to step.
        let p = rotated(&sweep("b", "a[x-1][y] + a[x+1][y]"), "");
        assert_eq!(skew(&p, None).per_step, 0);
    }

    #[test]
    fn a_three_level_rotation_looks_two_steps_ahead() {
        let rotate = "float (*t)[Y] = a; a = b; b = c; c = t;";
        // The wave equation, c = f(b, a): the next step reads c as b one plane above.
        let p = rotated(&sweep("c", "b[x-1][y] + b[x+1][y] - a[x][y]"), rotate);
        assert_eq!(p.rotation.as_ref().map(|r| r.period()), Some(3));
        assert_eq!(skew(&p, None).per_step, 1);
        // a's storage is the next step's c: a read two planes below must be done
        // before that step writes there, two planes a step.
        let p = rotated(&sweep("c", "b[x][y] + a[x-2][y]"), rotate);
        assert_eq!(skew(&p, None).per_step, 2);
        // b's storage is written two steps later (as c): a read two planes below
        // needs one plane a step; nothing else constrains this sweep.
        let p = rotated(&sweep("c", "b[x-2][y]"), rotate);
        assert_eq!(skew(&p, None).per_step, 1);
    }

    #[test]
    fn a_chain_of_sweeps_accumulates_its_reach() {
        // c reads b two planes above, b reads a one above, a reads c one below.
        let body = sweep("b", "a[x+1][y]") + &sweep("c", "b[x+2][y]") + &sweep("a", "c[x-1][y]");
        let s = skew(&program(&body), None);
        // a = c[x-1] may run one plane ahead of c's writer, which it reads below.
        assert_eq!(s.sweep, [0, 2, 1]);
        // Next step's first sweep reads a at +1, written by the last sweep (tau 1): 1 + 1 - 0.
        assert_eq!(s.per_step, 2);
        assert_eq!(s.below(), 2);
        assert_eq!(s.above(), 1);
    }
}
