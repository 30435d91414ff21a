//! The reference build for `tpace run`: the user's program unchanged except
//! for a timer around the time loop and a dump of the listed arrays after it.

use super::common::{BASE_RUNTIME, dump_block, indent_at, indent_rest, splice};
use crate::ir::Program;

/// Print the instrumented sequential program.
pub fn emit(program: &Program) -> String {
    let p = &program.pipeline;
    let indent = indent_at(&program.source, p.stmt.start);
    let loop_text = &program.source[p.stmt.clone()];
    let block = format!(
        "{{ /* tpace reference: the sequential time loop, timed */\n\
         {indent}const double tpace_start = tpace_now();\n\
         {indent}{loop_text}\n\
         {indent}fprintf(stderr, \"tpace-reference: seconds=%.6f\\n\", tpace_now() - tpace_start);\n\
         {dump}{indent}}}",
        dump = dump_block(program, &indent),
    );
    let body = splice(
        &program.source,
        vec![(p.stmt.clone(), indent_rest(&block, ""))],
    );
    format!(
        "/* tpace reference build of {path}: the original program, timed and dumping its arrays. */\n{BASE_RUNTIME}\n{body}",
        path = program.path
    )
}
