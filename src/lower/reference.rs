//! The reference build for `tpace run`: the user's program unchanged except
//! that each pipelined time loop is timed and followed by a dump of its listed
//! arrays and reductions, in the order the translation dumps them.

use crate::ir::{Pipeline, Program};
use crate::text::{indent_at, indent_rest, splice};
use std::fmt::Write;

/// The instrumented sequential program.
pub fn emit(program: &Program) -> String {
    let src = &program.source;
    let edits = program
        .pipelines
        .iter()
        .map(|p| {
            let indent = indent_at(src, p.stmt.start);
            (p.stmt.clone(), indent_rest(&block(program, p, &indent), ""))
        })
        .collect();
    format!(
        "/* tpace reference build of {path}: the original program, each pipelined loop timed and its arrays dumped. */\n{base}\n{body}",
        path = program.path,
        base = crate::runtime::BASE,
        body = splice(src, edits),
    )
}

/// One time loop, timed, then its dump.
fn block(program: &Program, p: &Pipeline, indent: &str) -> String {
    let loop_text = &program.source[p.stmt.clone()];
    let mut w = format!(
        "{{ /* tpace reference: the sequential time loop, timed */\n\
         {indent}const double tpace_start = tpace_now();\n\
         {indent}{loop_text}\n\
         {indent}fprintf(stderr, \"tpace-reference: {loc}: seconds=%.6f\\n\", tpace_now() - tpace_start);\n",
        loc = p.location,
    );
    let rank = p.grid.rank();
    let list = |f: &dyn Fn(&crate::ir::Extent) -> &str| {
        p.grid
            .dims
            .iter()
            .map(|d| format!("(long)({})", f(d)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (los, ns) = (list(&|d| &d.lo), list(&|d| &d.n));
    for a in &p.arrays {
        let _ = writeln!(
            w,
            "{indent}tpace_dump(\"{name}\", {base}, sizeof({ty}), {rank}, (const long[]){{{los}}}, (const long[]){{{ns}}});",
            name = a.display_name(),
            base = a.host_base,
            ty = a.elem.c_name(),
        );
    }
    let mut seen: Vec<&str> = Vec::new();
    for r in &p.reductions {
        if !seen.contains(&r.var.as_str()) {
            seen.push(&r.var);
            let _ = writeln!(
                w,
                "{indent}tpace_dump(\"{v}\", &{v}, sizeof({v}), 0, NULL, NULL);",
                v = r.var
            );
        }
    }
    w.push_str(indent);
    w.push('}');
    w
}
