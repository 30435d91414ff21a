//! Printing helpers shared by every back end.

use crate::ir::{Array, Layout, Program, Span};

/// The target-independent C runtime: parameters, chunk arithmetic, report, dump.
pub const COMMON_RUNTIME: &str = include_str!("runtime/common.h");

/// Replace spans of `source` (non-overlapping, any order) with new text.
pub fn splice(source: &str, mut edits: Vec<(Span, String)>) -> String {
    edits.sort_by_key(|(s, _)| s.start);
    let mut out = String::with_capacity(source.len() + 1024);
    let mut at = 0;
    for (span, text) in edits {
        debug_assert!(span.start >= at, "overlapping edits");
        out.push_str(&source[at..span.start]);
        out.push_str(&text);
        at = span.end;
    }
    out.push_str(&source[at..]);
    out
}

/// Leading whitespace of the line that contains byte `at`.
pub fn indent_at(source: &str, at: usize) -> String {
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    source[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// Indent every non-empty line of `text` by `indent`, except the first.
pub fn indent_rest(text: &str, indent: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(indent);
            }
        }
        out.push_str(line);
    }
    out
}

/// C expression for the address of the array's first grid element (all `lo` indices).
pub fn host_base(program: &Program, array: &Array) -> String {
    match array.layout {
        Layout::Flat => format!("(void *)({})", array.name),
        Layout::Static | Layout::PointerToArray => {
            let subs: String = program
                .pipeline
                .grid
                .dims
                .iter()
                .map(|d| format!("[{}]", d.lo))
                .collect();
            format!("(void *)&{}{subs}", array.name)
        }
    }
}

/// C expression for the elements in one plane (product of the inner extents).
pub fn plane_elements(program: &Program) -> String {
    let dims = &program.pipeline.grid.dims;
    if dims.len() == 1 {
        return "(size_t)1".to_string();
    }
    dims[1..]
        .iter()
        .map(|d| format!("(size_t)({})", d.n))
        .collect::<Vec<_>>()
        .join(" * ")
}

/// Statements that append every listed array to `$TPACE_DUMP` (for `tpace run`).
pub fn dump_block(program: &Program, indent: &str) -> String {
    let mut out = format!(
        "{indent}/* tpace: write the final arrays to the file named by TPACE_DUMP, if set (used by `tpace run`). */\n"
    );
    let dims = &program.pipeline.grid.dims;
    let los: Vec<String> = dims.iter().map(|d| format!("(long)({})", d.lo)).collect();
    let ns: Vec<String> = dims.iter().map(|d| format!("(long)({})", d.n)).collect();
    for a in &program.pipeline.arrays {
        out.push_str(&format!(
            "{indent}tpace_dump(\"{name}\", {base}, sizeof({ty}), {rank}, (const long[]){{{los}}}, (const long[]){{{ns}}});\n",
            name = a.name,
            base = host_base(program, a),
            ty = a.elem.c_name(),
            rank = dims.len(),
            los = los.join(", "),
            ns = ns.join(", "),
        ));
    }
    out
}

/// The statement that leaves the time counter where the sequential loop leaves it.
pub fn final_counter(program: &Program) -> Option<String> {
    let t = &program.pipeline.time;
    if t.declared_type.is_some() {
        return None;
    }
    Some(format!(
        "{var} = ({start}) + ({steps} > 0 ? {steps} : 0);",
        var = t.var,
        start = t.start,
        steps = t.trip_count()
    ))
}
