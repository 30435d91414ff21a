//! The functions of the user's file that the sweeps call, with the constants
//! they read: they run on the device too (the declarations a device file
//! takes are in [`super::declarations`]).

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

/// The functions of the file that the sweeps of `program` call (as the front
/// end found them).
pub fn functions(program: &Program) -> Functions {
    Functions {
        functions: program
            .device_functions
            .iter()
            .map(|f| Function {
                name: f.name.clone(),
                first: f.first.clone(),
                definition: f.definition.clone(),
            })
            .collect(),
        constants: program.device_constants.clone(),
        per_pipeline: program
            .pipelines
            .iter()
            .map(|p| p.device_functions.clone())
            .collect(),
    }
}
