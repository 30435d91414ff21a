//! What lowering a sweep needs to know about the pipeline around it (shared by
//! the loop and the subscript readers).

use crate::front::poly::Poly;
use crate::front::types::Types;
use crate::ir::{Array, Grid};
use std::collections::BTreeMap;
use tree_sitter::{Node, Tree};

/// What lowering a sweep needs to know about the pipeline around it.
pub struct Context<'a, 't> {
    /// The `size` clause.
    pub grid: &'a Grid,
    /// The listed arrays (component arrays once per component), named as the
    /// code being read names them (a sweep function: by its parameters).
    pub arrays: &'a [Array],
    /// The time loop's counter.
    pub time_var: &'a str,
    /// The C file.
    pub source: &'a str,
    /// Its syntax tree, for declarations.
    pub tree: &'t Tree,
    /// Where declarations are looked up (the time loop; in a sweep function, its loop nest).
    pub at: Node<'t>,
    /// Macros, typedefs and structs, of the file and its headers.
    pub types: &'a Types<'a>,
    /// In a sweep function, its scalar parameters with the values the call
    /// passes, read as polynomials in the caller's names (empty in the time loop).
    pub bindings: &'a BTreeMap<String, Poly>,
}

impl Context<'_, '_> {
    /// A subscript polynomial read in the code's own names, in the pipeline's
    /// names: each bound parameter replaced by the call's argument.
    pub fn bind(&self, p: Poly) -> Option<Poly> {
        if self.bindings.is_empty() {
            return Some(p);
        }
        p.substitute(self.bindings)
    }
}
