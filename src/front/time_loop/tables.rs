//! Per-step tables listed in `targetin`: PolyBench's FDTD lists `_fict_`, a 1-D
//! array the source row reads as `_fict_[t]`, beside its 2-D grid. Such an
//! array is no grid array: the sweeps read it as a per-step value (the host
//! evaluates `_fict_[t]` at each step and hands the kernels the value), so the
//! front end takes it off the list before it reads the listed arrays.

use crate::front::cst::{descendants, text};
use crate::front::directives::PipelineClauses;
use crate::text::mentions;
use tree_sitter::Node;

/// The `targetin` arrays that every mention in the time loop reads at subscripts
/// made of the time counter `time`, constants and variables the loop does not
/// change (`_fict_[t]`, `coef[t % 4][1]`): per-step tables, which the sweeps
/// read as per-step values.
pub fn per_step_tables(
    clauses: &PipelineClauses,
    time_loop: Node,
    time: &str,
    source: &str,
) -> Vec<String> {
    let nodes = descendants(time_loop);
    // What the loop changes: its spatial loops' indices and every variable it writes.
    let changed: Vec<&str> = nodes
        .iter()
        .filter_map(|n| match n.kind() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            "init_declarator" => n.child_by_field_name("declarator"),
            _ => None,
        })
        .filter(|v| v.kind() == "identifier")
        .map(|v| text(v, source))
        .filter(|v| *v != time)
        .collect();
    let spatial: Vec<&str> = nodes
        .iter()
        .filter(|n| n.kind() == "for_statement" && **n != time_loop)
        .filter_map(|n| n.child_by_field_name("initializer"))
        .filter_map(|i| match i.kind() {
            "assignment_expression" => i.child_by_field_name("left"),
            "declaration" => i
                .child_by_field_name("declarator")
                .and_then(|d| d.child_by_field_name("declarator")),
            _ => None,
        })
        .filter(|v| v.kind() == "identifier")
        .map(|v| text(v, source))
        .collect();
    let read_per_step = |id: &Node| {
        // The whole subscript chain `t[..][..]` whose base this is.
        let mut top = *id;
        while let Some(p) = top.parent().filter(|p| {
            p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(top)
        }) {
            top = p;
        }
        if top == *id {
            return false;
        }
        let written = top.parent().is_some_and(|p| match p.kind() {
            "assignment_expression" => p.child_by_field_name("left") == Some(top),
            "update_expression" => true,
            "pointer_expression" => true,
            _ => false,
        });
        let index_text = &source[id.end_byte()..top.end_byte()];
        !written
            && !spatial
                .iter()
                .chain(&changed)
                .any(|v| mentions(index_text, v))
    };
    clauses
        .targetin
        .iter()
        .map(|n| n.name.as_str())
        .filter(|name| {
            let mentions: Vec<&Node> = nodes
                .iter()
                .filter(|n| n.kind() == "identifier" && text(**n, source) == *name)
                .collect();
            !mentions.is_empty() && mentions.iter().all(|id| read_per_step(id))
        })
        .map(str::to_string)
        .collect()
}
