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
    /// In a sweep function, what its parameters stand for in the caller's
    /// names (nothing in the time loop).
    pub bindings: &'a Bindings,
}

/// What a sweep function's parameters stand for where the call stands.
#[derive(Debug, Clone, Default)]
pub struct Bindings {
    /// Scalar parameters: the call's values, read as polynomials.
    pub values: BTreeMap<String, Poly>,
    /// Parameters that point to a struct holding listed arrays: the caller's
    /// object (`f` of `f->ny` is the caller's `p`: `p->ny`).
    pub objects: BTreeMap<String, String>,
}

impl Bindings {
    /// The value of `name` (a variable or a member expression such as `f->ny`)
    /// in the caller's names, if a parameter is bound.
    fn value(&self, name: &str) -> Option<Poly> {
        if let Some(v) = self.values.get(name) {
            return Some(v.clone());
        }
        let end = name.find(['.', '-']).unwrap_or(name.len());
        let object = self.objects.get(&name[..end])?;
        (end < name.len()).then(|| Poly::var(&format!("{object}{}", &name[end..])))
    }
}

impl Context<'_, '_> {
    /// A subscript polynomial read in the code's own names, in the pipeline's
    /// names: each bound parameter replaced by the call's argument.
    pub fn bind(&self, p: Poly) -> Option<Poly> {
        if self.bindings.values.is_empty() && self.bindings.objects.is_empty() {
            return Some(p);
        }
        p.map_names(&|n| self.bindings.value(n))
    }
}
