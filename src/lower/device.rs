//! What a target's own device file (CUDA's `.cu`, compiled as C++) takes from
//! the user's program: every preprocessor line, of the file-scope type
//! declarations only those its kernels use, and the functions of the file the
//! sweeps call with the constants they read. The other declarations stay in the
//! host program alone, so that C the device compiler would refuse there (a
//! member named `class` or `new`) is never handed to it.

use crate::ir::{Program, Span};
use crate::text::identifiers;
use std::collections::BTreeSet;

/// The program's declarations (`Program::declarations`) that device code of
/// text `device` needs, in order: the preprocessor lines, and each type
/// declaration that declares a name the device code mentions, or a kept macro
/// it uses mentions, or a kept declaration mentions.
pub fn declarations(program: &Program, device: &str) -> Vec<Span> {
    let decls = &program.declarations;
    let texts: Vec<&str> = decls
        .iter()
        .map(|d| &program.source[d.span.clone()])
        .collect();
    let is_directive: Vec<bool> = texts
        .iter()
        .map(|t| t.trim_start().starts_with('#'))
        .collect();
    let declared: Vec<&Vec<String>> = decls.iter().map(|d| &d.declares).collect();
    let mut needed: BTreeSet<&str> = identifiers(device).into_iter().collect();
    // A directive is always kept; it brings in what it mentions once its macro is used.
    let mut used = vec![false; decls.len()];
    loop {
        let mut changed = false;
        for i in 0..decls.len() {
            if !used[i] && declared[i].iter().any(|n| needed.contains(n.as_str())) {
                used[i] = true;
                needed.extend(identifiers(texts[i]));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    decls
        .iter()
        .zip(is_directive.iter().zip(&used))
        .filter(|(_, (directive, used))| **directive || **used)
        .map(|(d, _)| d.span.clone())
        .collect()
}

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
