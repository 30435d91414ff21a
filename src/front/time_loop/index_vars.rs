//! Index variables: integers a sweep body computes at each point from the loop
//! indices and reads subscripts through, as Rodinia's hotspot3D does:
//!
//! ```c
//! c = x + y * nx + z * nx * ny;
//! w = (x == 0) ? c : c - 1;          /* clamped: the face reads itself */
//! ...
//! tOut[c] = tIn[c] * cc + tIn[w] * cw + ...;
//! ```
//!
//! tpace follows a variable assigned with `=` (or declared with an initial
//! value) by a statement of its own at the top level of the innermost loop's
//! body, from the end of that statement to the next statement that writes it.
//! Its value there is a set of polynomials in the loop indices and outside
//! variables: a `?:` stands for both of its branches (whichever the condition
//! picks), so that a subscript through it reaches each of them. A write under
//! an `if`, a `+=`, a `++` or anything not read as such a value ends what tpace
//! knows of the variable; a subscript that reads it there is refused.

use crate::front::cst::{Parsed, body_items, descendants, span, text};
use crate::front::macros::MacroTable;
use crate::front::poly::Poly;
use crate::ir::Span;
use std::collections::BTreeMap;
use tree_sitter::Node;

/// Most values one index expression may take (each `?:` doubles them).
pub const MAX_VALUES: usize = 64;

/// What one assignment says: `name` holds one of `values` in bytes `from..to`.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    /// `None`: assigned in a form tpace does not read.
    values: Option<Vec<Poly>>,
    /// The statement that assigns it (empty for other writes).
    stmt: Span,
    from: usize,
    to: usize,
}

/// The index variables of one sweep body.
#[derive(Debug, Clone, Default)]
pub struct IndexVars {
    entries: Vec<Entry>,
}

/// What a subscript's index variables say at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Values {
    /// It reads none: read it as it is.
    None,
    /// The values it may take.
    Some(Vec<Poly>),
    /// It reads `name`, which the body sets in a way tpace does not follow.
    Unknown(String),
    /// Its values are too many or not polynomials.
    TooMany,
}

impl IndexVars {
    /// Scan the innermost loop body `body` (in the file's `source`) for index
    /// variables. `loop_vars` are the sweep's loop indices: never index variables.
    pub fn scan(body: Node, source: &str, loop_vars: &[&str], macros: &MacroTable) -> IndexVars {
        let mut vars = IndexVars::default();
        let mut open: BTreeMap<String, usize> = BTreeMap::new();
        let end = body.end_byte();
        let close = |vars: &mut IndexVars, open: &mut BTreeMap<String, usize>, name: &str, at| {
            if let Some(i) = open.remove(name) {
                vars.entries[i].to = at;
            }
        };
        for item in body_items(body) {
            let assigned = plain_assignments(item, source);
            // Every other write in the statement ends what is known of its target.
            for n in descendants(item) {
                let Some(target) = write_target(n, source) else {
                    continue;
                };
                let name = text(target, source);
                if assigned.iter().any(|(a, _)| *a == target.start_byte()) {
                    continue;
                }
                if loop_vars.contains(&name) {
                    continue;
                }
                close(&mut vars, &mut open, name, n.start_byte());
                let i = vars.entries.len();
                vars.entries.push(Entry {
                    name: name.to_string(),
                    values: None,
                    stmt: 0..0,
                    from: n.start_byte(),
                    to: end,
                });
                open.insert(name.to_string(), i);
            }
            for (at, value) in assigned {
                let Some(target) = body.descendant_for_byte_range(at, at + 1) else {
                    continue;
                };
                let name = text(target, source).to_string();
                if loop_vars.contains(&name.as_str()) {
                    continue;
                }
                let values = vars.values_of(value, source, item.start_byte(), macros, 0);
                close(&mut vars, &mut open, &name, item.start_byte());
                let i = vars.entries.len();
                vars.entries.push(Entry {
                    name: name.clone(),
                    stmt: if values.is_some() { span(item) } else { 0..0 },
                    values,
                    from: item.end_byte(),
                    to: end,
                });
                open.insert(name, i);
            }
        }
        vars
    }

    /// The statements that set index variables tpace follows.
    pub fn statements(&self) -> Vec<Span> {
        let mut out: Vec<Span> = Vec::new();
        for e in self.entries.iter().filter(|e| !e.stmt.is_empty()) {
            if !out.contains(&e.stmt) {
                out.push(e.stmt.clone());
            }
        }
        out
    }

    /// Whether the body sets a variable called `name` (a name messages should not
    /// use for something else).
    pub fn names(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e.name == name)
    }

    /// The entry for `name` at byte `at`, if the body sets it before.
    fn at(&self, name: &str, at: usize) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.name == name && e.from <= at && at < e.to)
            .or_else(|| {
                // Set in the body, but not before `at` (or by a statement that contains it).
                self.entries.iter().find(|e| e.name == name && at < e.from)
            })
    }

    /// The values of the subscript `node` (in a tree over `source`: the file or
    /// a macro's expansion) at byte `at` of the file.
    pub fn subscript(&self, node: Node, source: &str, at: usize, macros: &MacroTable) -> Values {
        if self.entries.is_empty() {
            return Values::None;
        }
        let mut reads = None;
        for id in descendants(node)
            .into_iter()
            .filter(|n| n.kind() == "identifier")
        {
            let name = text(id, source);
            if let Some(e) = self.at(name, at) {
                if e.values.is_none() || at < e.from {
                    return Values::Unknown(name.to_string());
                }
                reads = Some(name);
            }
        }
        if reads.is_none() {
            // Through a macro's definition (`IDX(w, y)` reads `w` as an argument,
            // which the identifiers above include); nothing else to follow.
            return Values::None;
        }
        match self.values_of(node, source, at, macros, 0) {
            Some(v) => Values::Some(v),
            None => Values::TooMany,
        }
    }

    /// The values of expression `node` at byte `at` of the file.
    fn values_of(
        &self,
        node: Node,
        source: &str,
        at: usize,
        macros: &MacroTable,
        depth: usize,
    ) -> Option<Vec<Poly>> {
        if depth > crate::front::poly::MAX_DEPTH {
            return None;
        }
        let sub = |n: Node| self.values_of(n, source, at, macros, depth + 1);
        let pairwise = |l: Vec<Poly>, r: Vec<Poly>, f: &dyn Fn(&Poly, &Poly) -> Option<Poly>| {
            let mut out: Vec<Poly> = Vec::new();
            for a in &l {
                for b in &r {
                    let v = f(a, b)?;
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
            (out.len() <= MAX_VALUES).then_some(out)
        };
        match node.kind() {
            "parenthesized_expression" => sub(node.named_child(0)?),
            "conditional_expression" => {
                let mut out = sub(node.child_by_field_name("consequence")?)?;
                for v in sub(node.child_by_field_name("alternative")?)? {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
                (out.len() <= MAX_VALUES).then_some(out)
            }
            "identifier" => {
                let name = text(node, source);
                match self.at(name, at) {
                    Some(e) if e.from <= at => e.values.clone(),
                    Some(_) => None,
                    None if macros.get(name).is_some_and(|m| m.params.is_none()) => {
                        self.expansion(node, source, at, macros, depth)
                    }
                    None => Some(vec![Poly::var(name)]),
                }
            }
            "call_expression" => self.expansion(node, source, at, macros, depth),
            "cast_expression" => {
                let ty = text(node.child_by_field_name("type")?, source);
                integer_type(ty).then_some(())?;
                sub(node.child_by_field_name("value")?)
            }
            "unary_expression" => {
                let arg = sub(node.child_by_field_name("argument")?)?;
                match text(node.child_by_field_name("operator")?, source) {
                    "-" => arg.iter().map(|p| p.scale(-1)).collect(),
                    "+" => Some(arg),
                    _ => None,
                }
            }
            "binary_expression" => {
                let l = sub(node.child_by_field_name("left")?)?;
                let r = sub(node.child_by_field_name("right")?)?;
                match text(node.child_by_field_name("operator")?, source) {
                    "+" => pairwise(l, r, &|a, b| a.add(b)),
                    "-" => pairwise(l, r, &|a, b| a.sub(b)),
                    "*" => pairwise(l, r, &|a, b| a.mul(b)),
                    _ => None,
                }
            }
            _ => Poly::from_node(node, source).map(|p| vec![p]),
        }
    }

    /// The values of a macro invocation, read from its expansion.
    fn expansion(
        &self,
        node: Node,
        source: &str,
        at: usize,
        macros: &MacroTable,
        depth: usize,
    ) -> Option<Vec<Poly>> {
        let expanded = macros.expand(text(node, source))?;
        let parsed = Parsed::new(&expanded)?;
        let e = parsed.expr()?;
        // Stop where the expansion is the invocation again (an unknown function).
        if e.kind() == node.kind() && text(e, &parsed.src) == text(node, source) {
            return None;
        }
        self.values_of(e, &parsed.src, at, macros, depth + 1)
    }
}

/// Whether a cast's type text names an integer type (the index keeps its value).
fn integer_type(ty: &str) -> bool {
    let words = [
        "int",
        "long",
        "short",
        "size_t",
        "ptrdiff_t",
        "ssize_t",
        "intptr_t",
        "unsigned",
        "signed",
    ];
    let t: String = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    words.iter().any(|w| t.split(' ').any(|p| p == *w)) || (t.ends_with("_t") && t.contains("int"))
}

/// The plain assignments a statement makes of identifiers: (the target's first
/// byte, the value), for `v = e;` and `T v = e, w = f;`.
fn plain_assignments<'t>(item: Node<'t>, source: &str) -> Vec<(usize, Node<'t>)> {
    match item.kind() {
        "expression_statement" => {
            let Some(e) = item.named_child(0) else {
                return Vec::new();
            };
            let op = e
                .child_by_field_name("operator")
                .map_or("", |o| text(o, source));
            match (
                e.kind(),
                op,
                e.child_by_field_name("left"),
                e.child_by_field_name("right"),
            ) {
                ("assignment_expression", "=", Some(l), Some(r)) if l.kind() == "identifier" => {
                    vec![(l.start_byte(), r)]
                }
                _ => Vec::new(),
            }
        }
        "declaration" => {
            let mut cursor = item.walk();
            item.children_by_field_name("declarator", &mut cursor)
                .filter(|d| d.kind() == "init_declarator")
                .filter_map(|d| {
                    let name = d.child_by_field_name("declarator")?;
                    let value = d.child_by_field_name("value")?;
                    (name.kind() == "identifier").then(|| (name.start_byte(), value))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The identifier a node writes: an assignment's target, an operand of `++` /
/// `--`, a declared name, a variable whose address is taken.
fn write_target<'t>(n: Node<'t>, source: &str) -> Option<Node<'t>> {
    let target = match n.kind() {
        "assignment_expression" => n.child_by_field_name("left")?,
        "update_expression" => n.child_by_field_name("argument")?,
        "init_declarator" => n.child_by_field_name("declarator")?,
        "declaration" => n
            .child_by_field_name("declarator")
            .filter(|d| d.kind() == "identifier")?,
        "pointer_expression"
            if n.child_by_field_name("operator")
                .is_some_and(|o| text(o, source) == "&") =>
        {
            n.child_by_field_name("argument")?
        }
        _ => return None,
    };
    (target.kind() == "identifier").then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::cst::parse_c;

    fn body_of(src: &str) -> (tree_sitter::Tree, usize) {
        let tree = parse_c(src);
        let at = src.find("{ c =").expect("a body");
        (tree, at)
    }

    /// The block that starts at `at`.
    fn block(tree: &tree_sitter::Tree, at: usize) -> Node<'_> {
        let brace = tree
            .root_node()
            .descendant_for_byte_range(at, at + 1)
            .unwrap();
        brace
            .parent()
            .filter(|p| p.kind() == "compound_statement")
            .unwrap()
    }

    #[test]
    fn clamped_neighbours_reach_both_branches() {
        let src = "void f(void) { for (x = 0; x < n; x++) { c = x + y * nx; w = (x == 0) ? c : c - 1; \
                   o[c] = i[w]; c = 7; o[c] = 0; } }";
        let (tree, at) = body_of(src);
        let body = block(&tree, at);
        let macros = MacroTable::default();
        let vars = IndexVars::scan(body, src, &["x", "y"], &macros);
        let read = src.find("i[w]").unwrap();
        let index = tree
            .root_node()
            .descendant_for_byte_range(read + 2, read + 3)
            .unwrap();
        let Values::Some(v) = vars.subscript(index, src, read, &macros) else {
            panic!("w not followed");
        };
        let c = Poly::var("x")
            .add(&Poly::var("y").mul(&Poly::var("nx")).unwrap())
            .unwrap();
        assert_eq!(v, vec![c.clone(), c.sub(&Poly::constant(1)).unwrap()]);
        // After `c = 7;` c is 7.
        let late = src.rfind("o[c]").unwrap();
        let index = tree
            .root_node()
            .descendant_for_byte_range(late + 2, late + 3)
            .unwrap();
        assert_eq!(
            vars.subscript(index, src, late, &macros),
            Values::Some(vec![Poly::constant(7)])
        );
    }

    #[test]
    fn a_variable_set_under_an_if_is_unknown_after() {
        let src =
            "void f(void) { for (x = 0; x < n; x++) { c = x; if (x > 2) c = x - 1; o[c] = 0; } }";
        let (tree, at) = body_of(src);
        let body = block(&tree, at);
        let macros = MacroTable::default();
        let vars = IndexVars::scan(body, src, &["x"], &macros);
        let read = src.find("o[c]").unwrap();
        let index = tree
            .root_node()
            .descendant_for_byte_range(read + 2, read + 3)
            .unwrap();
        assert_eq!(
            vars.subscript(index, src, read, &macros),
            Values::Unknown("c".into())
        );
    }
}
