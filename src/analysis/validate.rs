//! Semantic checks: a program that fails one of these would be miscompiled
//! by an out-of-core schedule, so it is refused with a diagnostic.

use crate::diag::{DiagResult, Diagnostic};
use crate::ir::{AccessKind, Halo, Intent, MAX_HALO, Pipeline, Program, ScalarRole};
use crate::text::mentions;
use std::collections::BTreeSet;

/// Check every pipeline's sweeps against the directive and the schedules' assumptions.
pub fn validate(program: &Program) -> DiagResult<()> {
    let errors: Vec<Diagnostic> = program.pipelines.iter().flat_map(check_pipeline).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Every sweep's box must be a box: its loop bounds are evaluated once, on the
/// host, before the pipeline starts, and each kernel runs over a box.
fn box_bounds(p: &Pipeline) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for sweep in &p.body {
        for l in sweep.loops.iter().filter(|l| !l.fixed) {
            let other = sweep
                .loops
                .iter()
                .map(|o| o.var.as_str())
                .filter(|v| *v != l.var)
                .chain([p.time.var.as_str()])
                .find(|v| mentions(&l.lo, v) || mentions(&l.hi, v));
            let Some(other) = other else { continue };
            let (what, why) = if other == p.time.var {
                (
                    "the time loop's counter".to_string(),
                    "a sweep's bounds are read once, before the pipeline starts",
                )
            } else {
                (
                    format!("the index `{other}` of another loop"),
                    "each sweep runs as one kernel over a box",
                )
            };
            errors.push(Diagnostic::new(
                l.header.clone(),
                format!("the bounds of the `{}` loop depend on {what}", l.var),
                "not a fixed box",
                format!(
                    "give every loop of a sweep bounds that depend neither on the other loops' \
                     indices nor on the time step ({why})"
                ),
            ));
        }
    }
    errors
}

fn check_pipeline(p: &Pipeline) -> Vec<Diagnostic> {
    let mut errors = box_bounds(p);
    for sweep in &p.body {
        for acc in &sweep.accesses {
            let array = &p.arrays[acc.array];
            match acc.kind {
                AccessKind::Write => {
                    if array.intent == Intent::In {
                        errors.push(Diagnostic::new(
                            acc.span.clone(),
                            format!(
                                "`{}` is written but listed in {}(...)",
                                array.display_name(),
                                array.intent.word()
                            ),
                            "write to a read-only array",
                            format!("move `{}` to targetinout(...)", array.name),
                        ));
                    }
                    let rank = p.grid.rank();
                    let off_zero: Vec<String> = acc
                        .offsets
                        .iter()
                        .enumerate()
                        .filter(|(_, o)| **o != 0)
                        .map(|(pos, o)| format!("{o:+} in dim({})", rank - pos))
                        .collect();
                    if !off_zero.is_empty() {
                        errors.push(Diagnostic::new(
                            acc.span.clone(),
                            format!(
                                "`{}` is written at offset {}, not at the loop indices",
                                array.display_name(),
                                off_zero.join(" and ")
                            ),
                            "writes must be at offset 0",
                            "write each point at offset 0 (a[x][y] = ...) and read neighbours at offsets",
                        ));
                    }
                }
                AccessKind::Read => {
                    for (pos, off) in acc.offsets.iter().enumerate() {
                        let h = p.halo[pos];
                        if *off < -h.minus || *off > h.plus {
                            let dim = p.grid.rank() - pos;
                            errors.push(Diagnostic::new(
                                acc.span.clone(),
                                format!(
                                    "`{}` is read at offset {off} in dim({dim}), outside the declared halo [{}:{}]",
                                    array.display_name(), h.minus, h.plus
                                ),
                                "outside the halo",
                                widen_help(dim, h, *off),
                            ));
                        }
                    }
                }
            }
        }
        // Host memory reached through a pointer or an unlisted array: the device's
        // buffers hold only the listed arrays.
        for sc in sweep.scalars.iter().filter(|s| s.ty.is_none()) {
            errors.push(Diagnostic::new(
                sc.span.clone(),
                format!(
                    "`{}` is used in a sweep but is not a plain scalar or a listed array",
                    sc.name
                ),
                "the device can not reach it",
                format!(
                    "list `{0}` in targetin(...) if it is a grid array (declared with the grid's \
                     shape), read one element per step (`{0}[t]` with the time counter and \
                     constants: a per-step value), or copy the value into a scalar variable \
                     before the time loop and use that",
                    sc.name
                ),
            ));
        }
        // A variable carried from point to point (a reduction, a counter): a parallel
        // sweep would reorder or lose its updates.
        for sc in sweep
            .scalars
            .iter()
            .filter(|s| s.role == ScalarRole::Carried)
        {
            errors.push(Diagnostic::new(
                sc.span.clone(),
                format!(
                    "`{}` is carried from point to point in a sweep (a reduction or a counter)",
                    sc.name
                ),
                "updated at every point from its previous value",
                "tpace translates a variable carried from point to point only as a float or double \
                 reduction, with every use in statements `s += e;`, `s = s + e;`, \
                 `m = fmax(m, e);` (fmaxf, fmin, fminf) or `m = m > e ? m : e;` (any of <, <=, >, >=); \
                 rewrite it in one of these forms, or compute the value after the time loop",
            ));
        }
        // A reduction's result is known only after the pipeline: no sweep may read it.
        for sc in sweep
            .scalars
            .iter()
            .filter(|s| s.role != ScalarRole::Reduction)
        {
            if let Some(r) = p.reductions.iter().find(|r| r.var == sc.name) {
                errors.push(Diagnostic::new(
                    sc.span.clone(),
                    format!(
                        "`{}` is used in a sweep, but it is the result of a reduction in sweep {}",
                        sc.name,
                        r.sweep + 1
                    ),
                    "a reduction result read in the time loop",
                    "the pipeline runs k steps of each chunk before any reduction result of those \
                     steps is known (tpace paper §3.2); use the result after the time loop",
                ));
            }
        }
        // In-place update with neighbour reads (Gauss-Seidel): the result depends on
        // the loop order, which a chunked, parallel schedule can not keep.
        // One diagnostic per array and sweep, at its first neighbour read.
        let mut reported = Vec::new();
        let written: BTreeSet<usize> = sweep
            .accesses
            .iter()
            .filter(|w| w.kind == AccessKind::Write)
            .map(|w| w.array)
            .collect();
        for acc in &sweep.accesses {
            let reads_neighbour =
                acc.kind == AccessKind::Read && acc.offsets.iter().any(|o| *o != 0);
            if reads_neighbour && written.contains(&acc.array) && !reported.contains(&acc.array) {
                reported.push(acc.array);
                let name = &p.arrays[acc.array].display_name();
                errors.push(Diagnostic::new(
                    acc.span.clone(),
                    format!("`{name}` is read at a neighbour and written in the same sweep"),
                    "in-place (Gauss-Seidel) update",
                    format!(
                        "the result depends on the sequential loop order, which tpace can not keep; \
                         write the new values to a second array and copy or swap them into `{name}` in a later sweep"
                    ),
                ));
            }
        }
    }
    errors
}

/// What to do about a read at offset `off` outside the halo `h` of `dim(dim)`.
fn widen_help(dim: usize, h: Halo, off: i64) -> String {
    let minus = h.minus.max(off.saturating_neg());
    let plus = h.plus.max(off);
    if minus.max(plus) > MAX_HALO {
        format!(
            "tpace takes halo widths up to {MAX_HALO}; an offset of {off} is not a stencil \
             neighbour: check the subscript"
        )
    } else {
        format!("widen the halo clause for dim({dim}) to at least [{minus}:{plus}]")
    }
}
