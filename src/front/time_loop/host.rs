//! Statements of the time loop that are not sweeps (`gosa = 0.0f;`, `n_done++;`,
//! `if (t % 100 == 0) printf(...)`). The translation runs them on the host after
//! the executor has finished, in a replay of the time loop (see
//! `lower::call_site`), so they may not feed the sweeps: everything a
//! sweep reads must be fixed when the pipeline starts (the tpace paper, §3.2).

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{descendants, span, text};
use crate::ir::{Array, HostStatement, Reduction, ScalarRole, Sweep, TimeLoop};
use tree_sitter::{Node, Tree};

/// Refuse host statements whose effect the host replay can not reproduce.
#[allow(clippy::too_many_arguments)] // what a pipeline has read so far, and the file
pub fn check(
    host: &[HostStatement],
    body: &[Sweep],
    reductions: &[Reduction],
    arrays: &[Array],
    time: &TimeLoop,
    tree: &Tree,
    source: &str,
    macros: &crate::front::macros::MacroTable,
) -> DiagResult<()> {
    let root = tree.root_node();
    // What a sweep reads where the loop stands: a variable, or (a sweep function's
    // parameter) the argument the call passes.
    let read_by_sweep = |name: &str| {
        body.iter().any(|s| {
            s.scalars
                .iter()
                .any(|sc| sc.role == ScalarRole::Read && crate::text::mentions(&sc.value, name))
        })
    };
    // A sweep function's loop indices and temporaries are its own, not the caller's.
    let per_point = |name: &str| {
        body.iter().filter(|s| s.call.is_none()).any(|s| {
            s.scalars
                .iter()
                .any(|sc| sc.name == name && sc.role == ScalarRole::PerPoint)
                || s.loops
                    .iter()
                    .any(|l| l.var == name && l.declared_type.is_none())
        })
    };
    let mut errors = Vec::new();
    for h in host {
        // A `while` loop's own advance of its counter: the replay runs it in its place.
        if time.advance.as_ref() == Some(&h.span) {
            continue;
        }
        let Some(node) = root.descendant_for_byte_range(h.span.start, h.span.end) else {
            continue;
        };
        for id in descendants(node)
            .into_iter()
            .filter(|n| n.kind() == "identifier")
        {
            let name = text(id, source);
            if reductions.iter().any(|r| r.var == name) {
                continue;
            }
            let here = span(id);
            // A listed array is named by its identifier, or by a member expression
            // whose object this identifier is (`p` of `p->m`), or in a macro's expansion.
            let member = id
                .parent()
                .filter(|p| p.kind() == "field_expression")
                .and_then(|p| {
                    let whole = crate::front::poly::member_text(p, source)?;
                    arrays.iter().any(|a| a.name == whole).then_some(whole)
                });
            let through_macro = macros
                .get(name)
                .and_then(|_| {
                    let call = id.parent().filter(|p| p.kind() == "call_expression");
                    let invocation = call.map_or(id, |c| c);
                    macros.expand(text(invocation, source))
                })
                .and_then(|e| {
                    arrays
                        .iter()
                        .find(|a| crate::front::directives::mentions_name(&e, &a.name))
                        .map(|a| a.name.clone())
                });
            let listed = arrays
                .iter()
                .any(|a| a.name == name)
                .then(|| name.to_string());
            if let Some(name) = listed.or(member).or(through_macro) {
                // `tmp = u; u = un; un = tmp;`: the arrays' pointers swapped between steps.
                let swapped = id.parent().is_some_and(|p| {
                    p.kind() == "assignment_expression"
                        && p.child_by_field_name("operator")
                            .is_none_or(|o| text(o, source) == "=")
                });
                let help = if swapped {
                    "tpace follows listed pointers exchanged at the end of a step, after its last \
                     sweep, by plain assignments through a temporary of their type (`float *t = a; \
                     a = b; b = t;`, one declaration or assignment a statement); write the exchange \
                     that way, or the step's second half as a sweep: a copy (`u[i][j] = un[i][j]`, \
                     which runs as a buffer swap) or the stencil again from the other array into \
                     the first (two sweeps a step, as PolyBench writes Jacobi)"
                } else {
                    "while the pipeline runs, the arrays are on the device chunk by chunk and hold \
                     no single time step on the host; use the array in a sweep, or before or after \
                     the time loop"
                };
                errors.push(Diagnostic::new(
                    here,
                    format!(
                        "the listed array `{name}` is used in the time loop outside the sweeps"
                    ),
                    if swapped {
                        "a pointer assigned between sweeps"
                    } else {
                        "host code between sweeps"
                    },
                    help,
                ));
            } else if written(id, source) && (read_by_sweep(name) || name == time.var) {
                let what = if name == time.var {
                    "the time loop's counter".to_string()
                } else {
                    "a sweep reads it".to_string()
                };
                errors.push(Diagnostic::new(
                    here,
                    format!("`{name}` is written in the time loop outside the sweeps, and {what}"),
                    "changes what later steps compute",
                    "tpace runs k steps of a chunk before the host statements of those steps (it \
                     replays them on the host after the pipeline), so what a sweep reads must be \
                     fixed when the loop starts (tpace paper §3.2); compute it before the time loop",
                ));
            } else if per_point(name) {
                errors.push(Diagnostic::new(
                    here,
                    format!(
                        "`{name}` is used in the time loop outside the sweeps, but a sweep sets it at every point"
                    ),
                    "its value after a sweep is the last point's",
                    "a parallel sweep has no last point, so this value is not kept; use a \
                     reduction (`s += e`, `m = fmax(m, e)`) or compute it after the time loop",
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Whether identifier `id` is assigned, incremented, declared or has its address taken.
pub fn written(id: Node, source: &str) -> bool {
    let Some(p) = id.parent() else {
        return false;
    };
    match p.kind() {
        "assignment_expression" => p.child_by_field_name("left") == Some(id),
        "update_expression" => true,
        "init_declarator" | "declaration" => p.child_by_field_name("declarator") == Some(id),
        "pointer_expression" => p
            .child_by_field_name("operator")
            .is_some_and(|o| text(o, source) == "&"),
        _ => false,
    }
}

/// A jump that leaves the time loop under a test of a reduction's result (a
/// convergence test): the message names the reduction and the paper's constraint.
pub fn convergence_test(
    d: &mut Diagnostic,
    reductions: &[Reduction],
    time_loop: Node,
    tree: &Tree,
    source: &str,
) {
    let Some(jump) = tree
        .root_node()
        .descendant_for_byte_range(d.span.start, d.span.start + 1)
    else {
        return;
    };
    let mut at = jump.parent();
    while let Some(n) = at {
        if n.id() == time_loop.id() {
            return;
        }
        let cond = match n.kind() {
            "if_statement" | "while_statement" => n.child_by_field_name("condition"),
            _ => None,
        };
        if let Some(cond) = cond {
            let tested = descendants(cond).into_iter().find_map(|i| {
                let name = text(i, source);
                (i.kind() == "identifier")
                    .then(|| reductions.iter().find(|r| r.var == name))
                    .flatten()
            });
            if let Some(r) = tested {
                let word = d.message.split('`').nth(1).unwrap_or("jump").to_string();
                d.message = format!(
                    "`{word}` on a test of the reduction `{}` inside the pipelined time loop (a convergence test)",
                    r.var
                );
                d.label = "the step count would depend on a reduction result".into();
                d.help = "the pipeline runs k steps of each chunk before any result of those steps \
                          is known, so the step count must be fixed when the loop starts (tpace paper \
                          §3.2); run a fixed number of steps and test convergence after the time loop, \
                          or run the pipelined loop repeatedly from an outer loop"
                    .into();
                return;
            }
        }
        at = n.parent();
    }
}
