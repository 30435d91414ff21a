//! What lowering a sweep needs to know about the pipeline around it (shared by
//! the loop and the subscript readers).

use crate::front::types::Types;
use crate::ir::{Array, Grid};
use tree_sitter::{Node, Tree};

/// What lowering a sweep needs to know about the pipeline around it.
pub struct Context<'a, 't> {
    /// The `size` clause.
    pub grid: &'a Grid,
    /// The listed arrays (component arrays once per component).
    pub arrays: &'a [Array],
    /// The time loop's counter.
    pub time_var: &'a str,
    /// The C file.
    pub source: &'a str,
    /// Its syntax tree, for declarations.
    pub tree: &'t Tree,
    /// Where declarations are looked up (the time loop).
    pub at: Node<'t>,
    /// Macros, typedefs and structs, of the file and its headers.
    pub types: &'a Types<'a>,
}
