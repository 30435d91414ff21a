//! Whether what the code after a pipeline computes from an array reaches nothing but
//! output. Under MPI every rank runs that code and only rank 0's output is kept
//! (standard output and error, and the files it opens for writing): if the array's
//! values only end up printed, summed into what is printed, or written to a file, the
//! other ranks may run it on stale values and rank 0 alone needs the final ones.
//!
//! The rules, each conservative (anything else: every rank receives the array):
//!
//! * A value read from the array (an element `a[i][j]`, or the result of a function
//!   that reads it) may flow through arithmetic, comparisons, unary operators, casts to
//!   a real type, the branches (not the condition) of `?:`, and the `<math.h>` functions
//!   of real arguments ([`MATH_CALLS`]) into: an argument of an output call
//!   ([`OUTPUT_CALLS`]); a statement that discards it; or a local `float` or `double`
//!   variable of the function, declared once, never `static`, its address never taken,
//!   whose every use is again one of these (a checksum accumulated and printed).
//! * Never into a condition (`if`, loops, `switch`, `&&`, `||`, the test of `?:`), an
//!   array index, a function tpace does not know, an integer (a conversion that a stale
//!   value could overflow), a global, a struct member, a pointer, or `main`'s result.
//! * A function of the program called after the pipeline that reads the array (it is
//!   `static` and called only directly: [`File::touching`]) may return a value
//!   computed from it, under the same rules inside it, and must write nothing with it.
//! * `fwrite` may write the array (or a row of it) out whole.

use super::{
    File, Mention, Walk, ancestor, declared_in, function_name, in_declarator, operator,
    storage_class, strip, up_through_parens,
};
use crate::front::cst;
use std::cell::RefCell;
use std::collections::BTreeSet;
use tree_sitter::Node;

/// C library calls that write their arguments to a stream.
const OUTPUT_CALLS: &[&str] = &[
    "printf", "fprintf", "puts", "fputs", "putchar", "fputc", "putc", "fwrite",
];

/// `<math.h>` functions of real arguments whose real result depends on nothing else.
const MATH_CALLS: &[&str] = &[
    "fabs", "fabsf", "sqrt", "sqrtf", "cbrt", "exp", "expf", "exp2", "log", "logf", "log2",
    "log10", "pow", "powf", "hypot", "fmax", "fmaxf", "fmin", "fminf", "floor", "floorf", "ceil",
    "ceilf", "round", "trunc", "fmod", "sin", "sinf", "cos", "cosf", "tan", "tanh", "atan",
    "atan2", "copysign",
];

/// How deep calls of functions that read the array may nest.
const MAX_DEPTH: usize = 16;

/// Where the values went, in words ("printed by `printf` at line 73"), for the plan.
pub type Notes = RefCell<Vec<String>>;

/// The check for one array: the file, the functions that read it, and what was seen.
pub struct Sinks<'a, 't> {
    file: &'a File<'t>,
    touching: &'a BTreeSet<String>,
    name: &'a str,
    notes: &'a Notes,
    /// Local variables already known to reach only output: (function start, name).
    vars: RefCell<BTreeSet<(usize, String)>>,
}

impl<'a, 't> Sinks<'a, 't> {
    /// The check for the array `name`, whose readers among the file's functions are `touching`.
    pub fn new(
        file: &'a File<'t>,
        touching: &'a BTreeSet<String>,
        name: &'a str,
        notes: &'a Notes,
    ) -> Self {
        Sinks {
            file,
            touching,
            name,
            notes,
            vars: RefCell::new(BTreeSet::new()),
        }
    }

    /// A mention `id` of the array after the pipeline (an element, or `fwrite`'s buffer),
    /// `depth` subscripts reaching an element.
    pub fn mention(&self, id: Node<'t>, depth: usize) -> Walk<()> {
        let function = ancestor(id, "function_definition")
            .ok_or("a mention of the array outside any function")?;
        self.use_in(id, depth, function, false)
    }

    /// A call `id` (the callee's name) of a function that reads the array, after the pipeline.
    pub fn call(&self, id: Node<'t>) -> Walk<()> {
        self.call_in(id, false, 0)
    }

    fn call_in(&self, id: Node<'t>, returns: bool, depth: usize) -> Walk<()> {
        let file = self.file;
        let fname = file.text(id);
        let line = file.line(id.start_byte());
        let call = id
            .parent()
            .filter(|c| c.kind() == "call_expression")
            .ok_or_else(|| format!("line {line}: `{fname}` is named, not called"))?;
        let caller = ancestor(call, "function_definition")
            .ok_or_else(|| format!("line {line}: `{fname}` is called outside a function"))?;
        self.function_returns(fname, depth)?;
        self.sink(call, caller, returns)
    }

    /// A mention of the array in `function`: its value must reach only output (or,
    /// `returns`, the function's result).
    fn use_in(&self, id: Node<'t>, depth: usize, function: Node<'t>, returns: bool) -> Walk<()> {
        match self.file.classify(id, depth) {
            Mention::NoData => Ok(()),
            Mention::Output => {
                self.note("written out by `fwrite`", id);
                Ok(())
            }
            Mention::Element => {
                let mut element = id;
                while let Some(parent) = element.parent() {
                    if parent.kind() != "subscript_expression"
                        || parent.child_by_field_name("argument") != Some(element)
                    {
                        break;
                    }
                    element = parent;
                }
                self.sink(element, function, returns)
            }
            _ => Err(format!(
                "line {}: the program uses `{}` after the pipeline",
                self.file.line(id.start_byte()),
                self.name
            )),
        }
    }

    /// The function `fname`, which reads the array, computes from it only its result.
    fn function_returns(&self, fname: &str, depth: usize) -> Walk<()> {
        let file = self.file;
        if depth >= MAX_DEPTH {
            return Err("the functions that read it call each other too deep to follow".into());
        }
        let f = cst::descendants(file.tree.root_node())
            .into_iter()
            .find(|f| {
                f.kind() == "function_definition" && function_name(*f, file.src) == Some(fname)
            })
            .ok_or_else(|| format!("tpace could not find the definition of `{fname}`"))?;
        let body = f
            .child_by_field_name("body")
            .ok_or("a function without a body")?;
        let depth_subs = self.element_depth()?;
        for n in cst::descendants(body) {
            if n.kind() != "identifier" || in_declarator(n) {
                continue;
            }
            let word = file.text(n);
            if word == self.name {
                self.use_in(n, depth_subs, f, true)?;
            } else if self.touching.contains(word) {
                if word == fname {
                    return Err(format!("`{fname}` calls itself"));
                }
                self.call_in(n, true, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Subscripts that reach an element of the array (from its declaration's shape).
    fn element_depth(&self) -> Walk<usize> {
        let file = self.file;
        let root = file.tree.root_node();
        let decls = declared_in(root, self.name, file.src);
        let id = decls
            .first()
            .ok_or_else(|| format!("tpace could not find the declaration of `{}`", self.name))?;
        let decl = ancestor(*id, "declaration").ok_or("a declaration tpace does not follow")?;
        Ok(file.shape(decl, *id, self.name)?.0)
    }

    fn note(&self, what: &str, at: Node) {
        let line = self.file.line(at.start_byte());
        let text = format!("{what} at line {line}");
        let mut notes = self.notes.borrow_mut();
        if !notes.contains(&text) {
            notes.push(text);
        }
    }

    /// Where the value of expression `n` in `function` goes: only to output (or, with
    /// `returns`, to the function's result).
    fn sink(&self, n: Node<'t>, function: Node<'t>, returns: bool) -> Walk<()> {
        let file = self.file;
        let up = up_through_parens(n);
        let line = file.line(up.start_byte());
        let Some(parent) = up.parent() else {
            return Err(format!("line {line}: a use tpace does not follow"));
        };
        let is_field =
            |field: &str| parent.child_by_field_name(field).map(|c| c.id()) == Some(up.id());
        match parent.kind() {
            "binary_expression" => match operator(parent, file.src) {
                Some("&&" | "||") => {
                    Err(format!("line {line}: what runs depends on it (`&&`, `||`)"))
                }
                _ => self.sink(parent, function, returns),
            },
            "unary_expression" => self.sink(parent, function, returns),
            "cast_expression" => {
                let ty = parent
                    .child_by_field_name("type")
                    .map(|t| file.text(t))
                    .unwrap_or("");
                if is_real(ty) {
                    self.sink(parent, function, returns)
                } else {
                    Err(format!("line {line}: it is converted to `{ty}`"))
                }
            }
            "conditional_expression" if is_field("condition") => {
                Err(format!("line {line}: a choice depends on it (`?:`)"))
            }
            "conditional_expression" => self.sink(parent, function, returns),
            "argument_list" => {
                let call = parent.parent().ok_or("an argument list outside a call")?;
                let callee = call
                    .child_by_field_name("function")
                    .map(|f| file.text(f))
                    .unwrap_or("");
                if OUTPUT_CALLS.contains(&callee) {
                    self.note(&format!("printed by `{callee}`"), call);
                    Ok(())
                } else if MATH_CALLS.contains(&callee) {
                    self.sink(call, function, returns)
                } else {
                    Err(format!(
                        "line {line}: it is passed to `{callee}`, which tpace does not follow"
                    ))
                }
            }
            "assignment_expression" if is_field("left") => Err(format!(
                "line {line}: the program writes `{}` after the pipeline",
                self.name
            )),
            "assignment_expression" => {
                let left = parent
                    .child_by_field_name("left")
                    .map(strip)
                    .ok_or("an assignment without a left side")?;
                if left.kind() != "identifier" {
                    return Err(format!(
                        "line {line}: it is stored in `{}`",
                        file.text(left)
                    ));
                }
                self.variable(file.text(left), function, returns)?;
                self.sink(parent, function, returns)
            }
            "init_declarator" => {
                let declared = parent
                    .child_by_field_name("declarator")
                    .ok_or("a declaration without a name")?;
                if declared.kind() != "identifier" {
                    return Err(format!(
                        "line {line}: it is stored in `{}`",
                        file.text(declared)
                    ));
                }
                self.variable(file.text(declared), function, returns)
            }
            "expression_statement" | "sizeof_expression" => Ok(()),
            "return_statement" if returns => Ok(()),
            "return_statement" => Err(format!("line {line}: it is returned")),
            "if_statement" | "while_statement" | "do_statement" | "for_statement"
            | "switch_statement" => Err(format!("line {line}: a branch or loop depends on it")),
            "subscript_expression" => Err(format!("line {line}: it indexes an array")),
            _ => Err(format!(
                "line {line}: `{}` uses it in a way tpace does not follow",
                file.text(parent)
            )),
        }
    }

    /// The local variable `name` of `function` holds a value computed from the array:
    /// it must be a real of the function's own, and reach only output itself.
    fn variable(&self, name: &str, function: Node<'t>, returns: bool) -> Walk<()> {
        let file = self.file;
        let key = (function.start_byte(), name.to_string());
        if !self.vars.borrow_mut().insert(key) {
            return Ok(());
        }
        let fname = function_name(function, file.src).unwrap_or("?");
        let body = function
            .child_by_field_name("body")
            .ok_or("a function without a body")?;
        let params = function
            .child_by_field_name("declarator")
            .map_or(0, |d| declared_in(d, name, file.src).len());
        let decls = declared_in(body, name, file.src);
        let global = cst::descendants(file.tree.root_node())
            .into_iter()
            .filter(|n| n.kind() == "declaration" && ancestor(*n, "function_definition").is_none())
            .any(|d| !declared_in(d, name, file.src).is_empty());
        let [decl] = decls[..] else {
            return Err(format!(
                "it is stored in `{name}`, not a local of `{fname}` declared once"
            ));
        };
        if params > 0 || global {
            return Err(format!(
                "it is stored in `{name}`, which is also declared outside `{fname}`"
            ));
        }
        let declaration =
            ancestor(decl, "declaration").ok_or("a declaration tpace does not follow")?;
        let plain = decl.parent().is_some_and(|p| {
            p.kind() == "declaration"
                || (p.kind() == "init_declarator"
                    && p.child_by_field_name("declarator").map(|d| d.id()) == Some(decl.id()))
        });
        let ty = declaration
            .child_by_field_name("type")
            .map(|t| file.text(t))
            .unwrap_or("");
        if !plain || storage_class(declaration, file.src).is_some() || !is_real(ty) {
            return Err(format!(
                "it is stored in `{name}`, which is not a plain `float` or `double` local of `{fname}`"
            ));
        }
        for n in cst::descendants(body) {
            if n.kind() != "identifier" || file.text(n) != name || n.id() == decl.id() {
                continue;
            }
            let up = up_through_parens(n);
            let parent = up.parent().ok_or("a use tpace does not follow")?;
            let is_left = parent.kind() == "assignment_expression"
                && parent.child_by_field_name("left").map(|l| l.id()) == Some(up.id());
            match parent.kind() {
                _ if is_left => {}
                "update_expression" => self.sink(parent, function, returns)?,
                "pointer_expression" if operator(parent, file.src) == Some("&") => {
                    return Err(format!(
                        "line {}: the address of `{name}` is taken",
                        file.line(n.start_byte())
                    ));
                }
                _ => self.sink(n, function, returns)?,
            }
        }
        Ok(())
    }
}

/// Whether a type's text names a real floating type (`float`, `double`, `long double`,
/// perhaps `const`).
fn is_real(ty: &str) -> bool {
    let words: Vec<&str> = ty.split_whitespace().filter(|w| *w != "const").collect();
    matches!(words[..], ["float"] | ["double"] | ["long", "double"])
}
