//! Front ends: C source with directives in, stencil IR out.
//!
//! One module per directive dialect; all of them share the C parser helpers
//! in [`cst`] and the subscript arithmetic in [`poly`].

pub mod cst;
pub mod poly;
pub mod tpace;

use crate::diag::{DiagResult, Diagnostic};
use crate::ir::Program;

/// Parse a C file and lower its annotated time loop to the IR.
pub fn parse(path: &str, source: &str) -> DiagResult<Program> {
    let tree = cst::parse_c(source);
    let syntax = cst::syntax_errors(&tree, source);
    if !syntax.is_empty() {
        return Err(syntax);
    }
    if let Some(at) = source.find("#pragma stencil") {
        return Err(vec![Diagnostic::new(
            at..at + "#pragma stencil".len(),
            "the `#pragma stencil` dialect is not supported yet",
            "stencil-directive dialect",
            "use the `#pragma tpace` directives (init, pipeline, loop dim(d)) described in the README",
        )]);
    }
    tpace::lower(path, source, &tree)
}
