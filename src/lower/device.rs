//! The functions of the user's file that the sweeps call, with the constants
//! they read: they run on the device too (the declarations a device file
//! takes are in [`super::declarations`]).

use crate::front::time_loop::calls;
use crate::ir::{Program, Span};

/// A function of the file that sweeps call: it runs on the device too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its name.
    pub name: String,
    /// Its first declaration (a prototype or the definition).
    pub first: Span,
    /// Its definition.
    pub definition: Span,
}

/// The functions of the file the sweeps call, directly or through each other,
/// and the file-scope constants they read.
#[derive(Debug, Clone, Default)]
pub struct Functions {
    /// In source order.
    pub functions: Vec<Function>,
    /// Declarations of the constant scalars they read, in source order.
    pub constants: Vec<Span>,
    /// Per pipeline, the functions (indices into `functions`) its sweeps call.
    pub per_pipeline: Vec<Vec<usize>>,
}

/// The functions of the file that the sweeps of `program` call.
pub fn functions(program: &Program) -> Functions {
    let bodies =
        |p: &crate::ir::Pipeline| -> Vec<Span> { p.body.iter().map(|s| s.body.clone()).collect() };
    let all: Vec<Span> = program.pipelines.iter().flat_map(bodies).collect();
    let found = calls::device_functions(&program.source, &all);
    let functions: Vec<Function> = found
        .functions
        .into_iter()
        .map(|(name, first, definition)| Function {
            name,
            first,
            definition,
        })
        .collect();
    let per_pipeline = program
        .pipelines
        .iter()
        .map(|p| {
            let mine = calls::device_functions(&program.source, &bodies(p));
            mine.functions
                .iter()
                .filter_map(|(n, _, _)| functions.iter().position(|f| &f.name == n))
                .collect()
        })
        .collect();
    Functions {
        functions,
        constants: found.constants,
        per_pipeline,
    }
}
