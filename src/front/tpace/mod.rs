//! Front end for the `#pragma tpace` dialect (the tpace paper, §3.3): `init`,
//! `pipeline targetinout(...) targetin(...) size(...) halo(...) async` on the
//! time loop and `loop dim(d)` on each spatial loop. Its directives say
//! directly what [`crate::front::directives`] means; the time loops they mark
//! are lowered by [`crate::front::time_loop`].

pub mod clauses;

use crate::diag::{DiagResult, Diagnostic};
use crate::front::directives::Found;
use crate::front::pragmas::{self, PragmaLine};

/// Whether the text after `#pragma` belongs to the tpace dialect.
pub fn is_tpace_pragma(arg: &str) -> bool {
    let arg = arg.trim_start();
    arg.strip_prefix("tpace")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// The file's `#pragma tpace` lines, parsed, each with the statement it
/// belongs to. `tree` is the parse of `blanked`, the file with its pragma
/// lines blanked out.
pub fn directives<'t>(
    tree: &'t tree_sitter::Tree,
    blanked: &str,
    lines: &[PragmaLine],
) -> DiagResult<Vec<Found<'t>>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for line in lines.iter().filter(|p| is_tpace_pragma(&p.arg)) {
        match clauses::parse_directive(&line.arg, line.arg_start) {
            Ok(directive) => found.push(Found {
                line: line.clone(),
                directive,
                stmt: pragmas::attached_statement(tree, blanked, line),
            }),
            Err(d) => errors.push(d),
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// What to say when a file has no pipelined time loop: at its first tpace
/// directive, or at its first line.
pub fn missing_pipeline(source: &str, found: &[Found]) -> Diagnostic {
    let at = found
        .first()
        .map_or(0..source.find('\n').unwrap_or(source.len()), Found::span);
    Diagnostic::new(
        at,
        "no `#pragma tpace pipeline` directive",
        "tpace found no pipelined time loop",
        "put `#pragma tpace pipeline targetinout(...) size(...) halo(...)` above the time loop \
         (or mark it with the stencil dialect: `#pragma stencil begin` ... `end`)",
    )
}
