//! Whether the program reads an array again after a pipeline: a simple,
//! conservative liveness analysis over the host code that follows the time
//! loop. An array the program provably never reads again needs no download
//! after the last step (issue 19: in Jacobi the swap's temporary came back,
//! doubling the bytes down). Anything the rules below do not prove keeps
//! today's behaviour: the array is taken as read ([`After::Read`], with why).
//!
//! The rules, each needed for "unread" to be true of every run:
//!
//! * **What the array is.** A plain variable (not a struct member) declared
//!   exactly once where it is seen: a local of the pipeline's function (an
//!   automatic array `T w[X][Y]`, or a pointer `T (*w)[Y]` / `T *w` that is
//!   only ever set from `malloc`/`calloc`/`aligned_alloc` or `NULL`), or a
//!   file-scope `static` array (internal linkage: no other file can name it).
//!   A parameter (the caller's storage), a `static` or `extern` local, a
//!   global with external linkage, a pointer to pointers or a name declared
//!   twice (shadowing) is taken as read.
//! * **No way around its name.** Every mention of the name in its scope (the
//!   function for a local, the whole file for a file-scope static) is an
//!   element access with all its subscripts (`w[i][j]`, read or written, not
//!   under `&`), `sizeof`, a null test (`w == NULL`, `!w`, `if (w)`), `free(w)`
//!   or `w = malloc(...)`. Anything else (passed to a function, `&w[i][j]`,
//!   `w[i]` as a row pointer, copied into another pointer, returned) may let
//!   another name reach the storage: taken as read. A `#define` that mentions
//!   it, a header of the program's own (`#include "..."`, not read by tpace),
//!   `setjmp`/`longjmp` in the file or a `goto` in a function on the way make
//!   the rest of the program unclear: taken as read.
//! * **Nothing after the pipeline uses it.** From the time loop, every
//!   statement that follows it in each enclosing block, up to the function's
//!   end, must not mention the name other than by `sizeof`, a null test or
//!   `free`; a top-level `free(w);` settles it (freed, not read). Enclosing
//!   blocks past a local's own block are out of its lifetime: settled. A loop
//!   (`for`, `while`, `do`), `switch` or label around the pipeline (inside the
//!   local's block) means a later round may read it: taken as read. A write
//!   counts as a use too (a partial overwrite leaves the rest to be read).
//! * **Past the function, for a file-scope static.** At the end of `main` the
//!   program ends: settled. Any other function holding the pipeline must be
//!   `static` and called exactly once, directly, and the walk goes on in the
//!   caller after that call (the rest of the calling statement included),
//!   up to `main`. There, besides the name, calling a function that
//!   (directly or through others) mentions the array is a use; every such
//!   function must be `static` (or `main`) with its address never taken
//!   (no callback, `atexit` or thread can run it unseen).
//!
//! A file nested more than [`MAX_NESTING`] levels deep is not analysed (every
//! array taken as read): the walks would take quadratic time.
//!
//! Not built (taken as read): proving a full overwrite before the next read,
//! following the array into a function it is passed to, and a later pipeline
//! that rewrites it. Not seen: a macro given on the compiler's command line
//! (`-D`) or by a header outside the program that names the array.

mod outputs;

use crate::diag::line_col;
use crate::front::{cst, pragmas};
use crate::ir::{Pipeline, Program};
use std::collections::BTreeSet;
use tree_sitter::{Node, Tree};

/// What the program does with a listed array after a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// It may read it (or tpace can not tell): why, in words.
    Read(String),
    /// It never reads it again: `at` is the byte offset where that is settled
    /// (the `free`, the end of its block or of the program) and `how` says what
    /// happens there, in words.
    Unread {
        /// Offset in the source.
        at: usize,
        /// E.g. "it is freed without being read".
        how: String,
    },
}

impl After {
    /// Whether the program never reads the array again.
    pub fn unread(&self) -> bool {
        matches!(self, After::Unread { .. })
    }
}

/// For each listed array of `pipeline` (in clause order), what the program does
/// with it after the pipeline.
pub fn liveness(program: &Program, pipeline: &Pipeline) -> Vec<After> {
    let lines = pragmas::scan(&program.source);
    let blanked = pragmas::blank(&program.source, &lines);
    let tree = cst::parse_c(&blanked);
    // The walks below climb from each mention to its statement, and tree-sitter
    // finds a node's parent from the root: on a file nested thousands of levels
    // deep that is quadratic, so such a file keeps every download.
    let depth = nesting_depth(&tree);
    if depth > MAX_NESTING {
        let why = format!(
            "the file nests {depth} levels deep, more than the {MAX_NESTING} tpace follows for this"
        );
        return pipeline
            .arrays
            .iter()
            .map(|_| After::Read(why.clone()))
            .collect();
    }
    let file = File {
        src: &blanked,
        tree: &tree,
        sweep_calls: sweep_calls(program),
    };
    pipeline
        .arrays
        .iter()
        .map(|a| match file.after(pipeline, &a.name, None) {
            Ok(dead) => dead,
            Err(why) => After::Read(why),
        })
        .collect()
}

/// The time loops' calls of sweep functions (see `File::sweep_calls`).
fn sweep_calls(program: &Program) -> Vec<crate::ir::Span> {
    program
        .pipelines
        .iter()
        .flat_map(|p| &p.body)
        .filter_map(|s| s.call.as_ref().map(|c| c.span.clone()))
        .collect()
}

/// Where a listed array's final values must be after its pipeline when MPI ranks run
/// the program: every rank runs the code after the pipeline, and only rank 0's output
/// is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receivers {
    /// Rank 0 alone: the code after the pipeline only outputs it (prints it, sums it
    /// into what it prints, writes it to a file); how, in words.
    Root(String),
    /// Every rank: the code after it may change what every rank does next (or tpace
    /// can not tell); why, in words.
    Every(String),
}

impl Receivers {
    /// Whether rank 0 alone receives it.
    pub fn root(&self) -> bool {
        matches!(self, Receivers::Root(_))
    }
}

/// For each listed array of `pipeline` (in clause order), which ranks need its final
/// values: the walk of [`liveness`] over the code after the pipeline, where a read is
/// allowed if what it reads reaches nothing but output ([`outputs`]).
pub fn receivers(program: &Program, pipeline: &Pipeline) -> Vec<Receivers> {
    let lines = pragmas::scan(&program.source);
    let blanked = pragmas::blank(&program.source, &lines);
    let tree = cst::parse_c(&blanked);
    let depth = nesting_depth(&tree);
    if depth > MAX_NESTING {
        let why = format!(
            "the file nests {depth} levels deep, more than the {MAX_NESTING} tpace follows for this"
        );
        return pipeline
            .arrays
            .iter()
            .map(|_| Receivers::Every(why.clone()))
            .collect();
    }
    let file = File {
        src: &blanked,
        tree: &tree,
        sweep_calls: sweep_calls(program),
    };
    pipeline
        .arrays
        .iter()
        .map(|a| {
            let notes = std::cell::RefCell::new(Vec::new());
            match file.after(pipeline, &a.name, Some(&notes)) {
                Ok(_) => {
                    let notes = notes.into_inner();
                    Receivers::Root(if notes.is_empty() {
                        "nothing after the pipeline reads it".to_string()
                    } else {
                        format!("after the pipeline it is only output: {}", notes.join(", "))
                    })
                }
                Err(why) => Receivers::Every(why),
            }
        })
        .collect()
}

/// The parsed file (pragma lines blanked, offsets those of the source).
struct File<'t> {
    src: &'t str,
    tree: &'t Tree,
    /// The time loops' calls of sweep functions: the pipelines run those nests,
    /// and the functions keep no pointer they are passed (the front end
    /// accepts only declarations and loop nests in them).
    sweep_calls: Vec<crate::ir::Span>,
}

/// Where an array's storage lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// An automatic array of the function.
    LocalArray,
    /// A local pointer to memory only `malloc` and friends gave it.
    LocalPointer,
    /// A file-scope `static` array.
    FileStatic,
}

/// How one mention of the name uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mention {
    /// `w[i][j]`: an element, read or written.
    Element,
    /// `sizeof`, a null test: the data is not touched.
    NoData,
    /// The argument of `free`.
    Freed,
    /// Written out whole (or a row of it) by `fwrite`, its first argument: read, aliased by nothing.
    Output,
    /// `w = malloc(...)` or `w = NULL`.
    Allocated,
    /// Anything else: what it is, in words.
    Other(String),
}

/// Most callers the walk past a function's end follows up to `main`.
const MAX_CALL_DEPTH: usize = 16;

type Walk<T> = Result<T, String>;

impl<'t> File<'t> {
    fn line(&self, at: usize) -> usize {
        line_col(self.src, at).0
    }

    fn text(&self, n: Node) -> &'t str {
        cst::text(n, self.src)
    }

    /// The verdict for the array named `name`; `Err` says why it is taken as read.
    /// With `outputs` (notes of where the values go), reads whose values reach only
    /// output are allowed ([`outputs`]).
    fn after(&self, p: &Pipeline, name: &str, outputs: Option<&outputs::Notes>) -> Walk<After> {
        if !is_identifier(name) {
            return Err(format!(
                "`{name}` is not a plain variable: tpace follows only those"
            ));
        }
        self.file_level(name)?;
        let root = self.tree.root_node();
        let time_loop = ["for_statement", "while_statement", "do_statement"]
            .into_iter()
            .find_map(|kind| find_node(root, p.stmt.clone(), kind))
            .ok_or("tpace could not find the time loop in the parse")?;
        let function = find_node(root, p.function.clone(), "function_definition")
            .ok_or("tpace could not find the pipeline's function")?;
        let (storage, decl, depth) = self.declaration(name, time_loop, function)?;
        let scope = match storage {
            Storage::FileStatic => root,
            _ => function,
        };
        let decls = declared_in(scope, name, self.src);
        if decls.len() != 1 {
            return Err(format!(
                "`{name}` is declared {} times in its scope: tpace does not tell them apart",
                decls.len()
            ));
        }
        // Every mention must be one that no other name can reach the storage through.
        for id in mentions(scope, name, self.src, &decls) {
            if let Mention::Other(what) = self.classify(id, depth) {
                return Err(format!("line {}: {what}", self.line(id.start_byte())));
            }
        }
        if storage == Storage::LocalPointer {
            self.allocated_only(decl, name)?;
        }
        // A function defined inside this one (a GNU C extension) could read a local
        // under its own name.
        if let Some(inner) = cst::descendants(function)
            .into_iter()
            .find(|n| n.kind() == "function_definition" && n.id() != function.id())
        {
            return Err(format!(
                "line {}: a function is defined inside the pipeline's function",
                self.line(inner.start_byte())
            ));
        }
        let touching = if storage == Storage::FileStatic {
            self.touching(name)?
        } else {
            BTreeSet::new()
        };
        let walker = Walker {
            file: self,
            name,
            depth,
            outputs: outputs.map(|notes| outputs::Sinks::new(self, &touching, name, notes)),
            touching: &touching,
            // A local's lifetime ends with the block that declares it.
            block: (storage != Storage::FileStatic).then(|| enclosing_block(decl)),
        };
        walker.from(time_loop, function, 0)
    }

    /// What the whole file makes unclear: longjmp, own headers, macros naming it.
    fn file_level(&self, name: &str) -> Walk<()> {
        for n in cst::descendants(self.tree.root_node()) {
            if n.kind() == "identifier"
                && matches!(
                    self.text(n),
                    "setjmp" | "longjmp" | "sigsetjmp" | "siglongjmp" | "_setjmp" | "_longjmp"
                )
            {
                return Err(format!(
                    "line {}: the program uses `{}`, which can jump back to before the pipeline",
                    self.line(n.start_byte()),
                    self.text(n)
                ));
            }
        }
        for span in pragmas::other_directives(self.src) {
            let line = &self.src[span.clone()];
            let words = crate::text::identifiers(line);
            if words.first() == Some(&"include") && line.contains('"') {
                return Err(format!(
                    "line {}: the file includes a header of its own, which tpace does not read",
                    self.line(span.start)
                ));
            }
            if words.contains(&name) {
                return Err(format!(
                    "line {}: a preprocessor line names `{name}`",
                    self.line(span.start)
                ));
            }
        }
        Ok(())
    }

    /// The declaration in force at the time loop: storage, its declarator's
    /// identifier, and how many subscripts reach an element.
    fn declaration(
        &self,
        name: &str,
        time_loop: Node<'t>,
        function: Node<'t>,
    ) -> Walk<(Storage, Node<'t>, usize)> {
        let parameter = function
            .child_by_field_name("declarator")
            .is_some_and(|d| !declared_in(d, name, self.src).is_empty());
        if parameter {
            return Err(format!(
                "`{name}` is a parameter of `{}`: its storage is the caller's",
                function_name(function, self.src).unwrap_or("the function")
            ));
        }
        // Declarations in the blocks around the time loop, before it.
        let mut node = time_loop;
        while let Some(parent) = node.parent() {
            if parent.kind() == "compound_statement" {
                for item in cst::named_children(parent) {
                    if item.start_byte() >= node.start_byte() {
                        break;
                    }
                    if item.kind() != "declaration" {
                        continue;
                    }
                    if let Some(id) = declared_in(item, name, self.src).into_iter().next() {
                        if let Some(class) = storage_class(item, self.src) {
                            return Err(format!(
                                "`{name}` is a `{class}` local: it outlives the pipeline's function"
                            ));
                        }
                        let (depth, pointer) = self.shape(item, id, name)?;
                        let storage = if pointer {
                            Storage::LocalPointer
                        } else {
                            Storage::LocalArray
                        };
                        return Ok((storage, id, depth));
                    }
                }
            }
            if parent.id() == function.id() {
                break;
            }
            node = parent;
        }
        // A file-scope declaration.
        let root = self.tree.root_node();
        let top: Vec<Node> = cst::descendants(root)
            .into_iter()
            .filter(|n| n.kind() == "declaration" && !inside_function(*n))
            .collect();
        for item in top {
            if let Some(id) = declared_in(item, name, self.src).into_iter().next() {
                if storage_class(item, self.src) != Some("static") {
                    return Err(format!(
                        "`{name}` is a global without `static`: other files of the program may read it"
                    ));
                }
                let (depth, pointer) = self.shape(item, id, name)?;
                if pointer {
                    return Err(format!(
                        "`{name}` is a file-scope pointer: tpace does not follow what it points to"
                    ));
                }
                return Ok((Storage::FileStatic, id, depth));
            }
        }
        Err(format!("tpace could not find the declaration of `{name}`"))
    }

    /// Subscripts to an element and whether the declarator is a pointer, from the
    /// declarator of `id` (`T w[X][Y]`: 2, no; `T (*w)[Y]`: 2, yes; `T *w`: 1, yes).
    fn shape(&self, decl: Node, id: Node, name: &str) -> Walk<(usize, bool)> {
        let mut depth = 0;
        let mut pointers = 0;
        let mut node = id;
        while let Some(parent) = node.parent() {
            if parent.id() == decl.id() || parent.kind() == "init_declarator" {
                break;
            }
            match parent.kind() {
                "array_declarator" => depth += 1,
                "pointer_declarator" => {
                    depth += 1;
                    pointers += 1;
                }
                "parenthesized_declarator" => {}
                other => {
                    return Err(format!(
                        "`{name}` has a declarator tpace does not follow ({other})"
                    ));
                }
            }
            node = parent;
        }
        if pointers > 1 {
            return Err(format!(
                "`{name}` is a pointer to pointers: its rows may be shared with other arrays"
            ));
        }
        Ok((depth, pointers == 1))
    }

    /// A local pointer's storage is its own: its declaration sets it from an
    /// allocation, `NULL` or nothing (assignments were checked with its mentions).
    fn allocated_only(&self, id: Node, name: &str) -> Walk<()> {
        let mut node = id;
        while let Some(parent) = node.parent() {
            if parent.kind() == "init_declarator" {
                if let Some(value) = parent.child_by_field_name("value")
                    && !self.is_allocation(value)
                {
                    return Err(format!(
                        "line {}: `{name}` starts as `{}`, which may be other memory",
                        self.line(value.start_byte()),
                        self.text(value)
                    ));
                }
                return Ok(());
            }
            if parent.kind() == "declaration" {
                return Ok(());
            }
            node = parent;
        }
        Ok(())
    }

    /// `malloc(...)`, `calloc(...)`, `aligned_alloc(...)` (cast or not), `NULL` or `0`.
    fn is_allocation(&self, value: Node) -> bool {
        let v = strip(value);
        match v.kind() {
            "call_expression" => v
                .child_by_field_name("function")
                .is_some_and(|f| matches!(self.text(f), "malloc" | "calloc" | "aligned_alloc")),
            _ => matches!(self.text(v), "NULL" | "0"),
        }
    }

    /// How the mention `id` uses the name (`depth` subscripts reach an element).
    fn classify(&self, id: Node, depth: usize) -> Mention {
        if self
            .sweep_calls
            .iter()
            .any(|c| c.contains(&id.start_byte()))
        {
            return Mention::Element;
        }
        let mut node = id;
        while let Some(parent) = node.parent() {
            if parent.kind() == "sizeof_expression" {
                return Mention::NoData;
            }
            if pragmas::is_statement(parent.kind()) || parent.kind() == "function_definition" {
                break;
            }
            node = parent;
        }
        let mut cur = id;
        let mut subs = 0;
        while let Some(parent) = cur.parent() {
            let is_argument = parent.kind() == "subscript_expression"
                && parent.child_by_field_name("argument") == Some(cur);
            if !is_argument {
                break;
            }
            subs += 1;
            cur = parent;
        }
        if subs > 0 {
            if subs != depth {
                if self.fwrite_buffer(cur) {
                    return Mention::Output;
                }
                return Mention::Other(format!(
                    "`{}` takes a part of it as a pointer",
                    self.text(cur)
                ));
            }
            let up = up_through_parens(cur);
            if let Some(parent) = up.parent()
                && parent.kind() == "pointer_expression"
                && operator(parent, self.src) == Some("&")
            {
                return Mention::Other(format!(
                    "`{}` takes the address of an element",
                    self.text(parent)
                ));
            }
            return Mention::Element;
        }
        let up = up_through_parens(id);
        let Some(parent) = up.parent() else {
            return Mention::Other("a use tpace does not follow".into());
        };
        let whole = || self.text(parent).to_string();
        match parent.kind() {
            "unary_expression" if operator(parent, self.src) == Some("!") => Mention::NoData,
            "binary_expression" => match operator(parent, self.src) {
                Some("&&" | "||") => Mention::NoData,
                Some("==" | "!=") => {
                    let other = [
                        parent.child_by_field_name("left"),
                        parent.child_by_field_name("right"),
                    ]
                    .into_iter()
                    .flatten()
                    .find(|n| n.id() != up.id());
                    if other.is_some_and(|o| matches!(self.text(strip(o)), "NULL" | "0")) {
                        Mention::NoData
                    } else {
                        Mention::Other(format!("`{}` compares its address", whole()))
                    }
                }
                _ => Mention::Other(format!("`{}` computes with its address", whole())),
            },
            "if_statement" | "while_statement" | "do_statement" => Mention::NoData,
            "assignment_expression"
                if parent.child_by_field_name("left").map(|n| n.id()) == Some(up.id()) =>
            {
                let plain = operator(parent, self.src) == Some("=");
                match parent.child_by_field_name("right") {
                    Some(r) if plain && self.is_allocation(r) => Mention::Allocated,
                    _ => Mention::Other(format!(
                        "`{}` sets it to memory tpace does not follow",
                        whole()
                    )),
                }
            }
            "argument_list" | "cast_expression" => {
                let arg = if parent.kind() == "cast_expression" {
                    up_through_parens(parent)
                } else {
                    up
                };
                let call = arg
                    .parent()
                    .filter(|l| l.kind() == "argument_list")
                    .and_then(|l| l.parent());
                let callee = call
                    .and_then(|c| c.child_by_field_name("function"))
                    .map(|f| self.text(f));
                match (callee, call) {
                    (Some("fwrite"), Some(_)) if self.fwrite_buffer(id) => Mention::Output,
                    (Some("free"), Some(c)) => {
                        let args = c
                            .child_by_field_name("arguments")
                            .map_or(0, |a| a.named_child_count());
                        if args == 1 {
                            Mention::Freed
                        } else {
                            Mention::Other(format!("`{}` passes it on", self.text(c)))
                        }
                    }
                    (Some(f), Some(_)) => Mention::Other(format!(
                        "it is passed to `{f}`, which tpace does not follow"
                    )),
                    _ => Mention::Other(format!("`{}` converts its address", whole())),
                }
            }
            "pointer_expression" if operator(parent, self.src) == Some("&") => {
                Mention::Other(format!("`{}` takes its address", whole()))
            }
            "return_statement" => Mention::Other("it is returned".into()),
            _ => Mention::Other(format!("`{}` uses its address", whole())),
        }
    }

    /// Whether `n` (the array, or a row of it) is the first argument of `fwrite`: the
    /// buffer it writes out, which it only reads.
    fn fwrite_buffer(&self, n: Node) -> bool {
        let up = up_through_parens(n);
        let Some(list) = up.parent().filter(|l| l.kind() == "argument_list") else {
            return false;
        };
        let first = list.named_child(0).map(|c| c.id()) == Some(up.id());
        let callee = list
            .parent()
            .and_then(|c| c.child_by_field_name("function"))
            .map(|f| self.text(f));
        first && callee == Some("fwrite")
    }

    /// Functions of the file that mention `name`, directly or through the
    /// functions they call; each must be `static` (or `main`) and named only in
    /// direct calls, so that nothing the walk does not see can run it.
    fn touching(&self, name: &str) -> Walk<BTreeSet<String>> {
        let functions: Vec<(String, Node)> = cst::descendants(self.tree.root_node())
            .into_iter()
            .filter(|n| n.kind() == "function_definition")
            .filter_map(|f| function_name(f, self.src).map(|n| (n.to_string(), f)))
            .collect();
        let mut touching: BTreeSet<String> = BTreeSet::new();
        loop {
            let before = touching.len();
            for (fname, f) in &functions {
                if touching.contains(fname) {
                    continue;
                }
                let body = f.child_by_field_name("body");
                let uses = body.into_iter().flat_map(cst::descendants).any(|n| {
                    n.kind() == "identifier"
                        && (self.text(n) == name || touching.contains(self.text(n)))
                });
                if uses {
                    touching.insert(fname.clone());
                }
            }
            if touching.len() == before {
                break;
            }
        }
        for (fname, f) in &functions {
            if !touching.contains(fname) {
                continue;
            }
            if fname != "main" && storage_class(*f, self.src) != Some("static") {
                return Err(format!(
                    "`{fname}` uses `{name}` and is not `static`: other files may call it"
                ));
            }
        }
        for n in cst::descendants(self.tree.root_node()) {
            if n.kind() != "identifier" || !touching.contains(self.text(n)) || in_declarator(n) {
                continue;
            }
            let called = n
                .parent()
                .filter(|p| p.kind() == "call_expression")
                .and_then(|p| p.child_by_field_name("function"))
                .is_some_and(|f| f.id() == n.id());
            if !called {
                return Err(format!(
                    "line {}: `{}` uses `{name}` and its address is taken",
                    self.line(n.start_byte()),
                    self.text(n)
                ));
            }
        }
        for span in pragmas::other_directives(self.src) {
            if let Some(f) = crate::text::identifiers(&self.src[span.clone()])
                .into_iter()
                .find(|w| touching.contains(*w))
            {
                return Err(format!(
                    "line {}: a preprocessor line names `{f}`, which uses `{name}`",
                    self.line(span.start)
                ));
            }
        }
        Ok(touching)
    }
}

/// The walk over what runs after the pipeline.
struct Walker<'a, 't> {
    file: &'a File<'t>,
    name: &'a str,
    depth: usize,
    /// Reads whose values reach only output are allowed (and noted): the walk that
    /// decides whether rank 0 alone needs the array ([`receivers`]).
    outputs: Option<outputs::Sinks<'a, 't>>,
    /// File-scope statics: functions that use the array (a call is a use).
    touching: &'a BTreeSet<String>,
    /// Locals: the block whose end ends the array's lifetime.
    block: Option<Node<'t>>,
}

/// What a stretch of code does with the array.
enum Scan {
    /// Nothing.
    Nothing,
    /// A top-level `free` of it at this offset.
    Freed(usize),
}

impl<'t> Walker<'_, 't> {
    /// The code after `start` (a statement, or a call inside one) in `function`
    /// and, for a file-scope static, in the callers up to `main`.
    fn from(&self, start: Node<'t>, function: Node<'t>, depth: usize) -> Walk<After> {
        let file = self.file;
        let fname = function_name(function, file.src).unwrap_or("?").to_string();
        if let Some(g) = cst::descendants(function)
            .into_iter()
            .find(|n| n.kind() == "goto_statement")
        {
            return Err(format!(
                "line {}: `{fname}` uses `goto`, which tpace does not follow",
                file.line(g.start_byte())
            ));
        }
        let mut node = start;
        // A call inside a statement: the rest of that statement runs after it.
        if !pragmas::is_statement(node.kind()) {
            let mut stmt = node;
            while let Some(parent) = stmt.parent() {
                if pragmas::is_statement(stmt.kind()) && is_block_like(parent.kind()) {
                    break;
                }
                stmt = parent;
            }
            if let Scan::Freed(at) = self.scan(stmt, Some(node))? {
                return Ok(self.freed(at));
            }
            node = stmt;
        }
        while let Some(parent) = node.parent() {
            if parent.kind() == "function_definition" {
                break;
            }
            match parent.kind() {
                "for_statement" | "while_statement" | "do_statement" => {
                    return Err(format!(
                        "line {}: the pipeline is inside a loop, whose next round may read it",
                        file.line(parent.start_byte())
                    ));
                }
                "switch_statement" | "case_statement" | "labeled_statement" => {
                    return Err(format!(
                        "line {}: the pipeline is inside a `switch` or under a label",
                        file.line(parent.start_byte())
                    ));
                }
                _ => {}
            }
            for sibling in cst::named_children(parent) {
                if sibling.start_byte() < node.end_byte() {
                    continue;
                }
                if let Scan::Freed(at) = self.scan(sibling, None)? {
                    return Ok(self.freed(at));
                }
            }
            if self.block.is_some_and(|b| b.id() == parent.id()) {
                let end = parent.end_byte().saturating_sub(1);
                let how = if parent.parent().is_some_and(|f| f.id() == function.id()) {
                    format!("`{fname}` returns without reading it")
                } else {
                    "its block ends without reading it".to_string()
                };
                return Ok(After::Unread { at: end, how });
            }
            node = parent;
        }
        // The end of the function: a file-scope static lives on in the caller.
        let end = function.end_byte().saturating_sub(1);
        if self.block.is_some() {
            return Ok(After::Unread {
                at: end,
                how: format!("`{fname}` returns without reading it"),
            });
        }
        let named: Vec<Node> = cst::descendants(file.tree.root_node())
            .into_iter()
            .filter(|n| n.kind() == "identifier" && file.text(*n) == fname && !in_declarator(*n))
            .collect();
        if fname == "main" {
            if let Some(n) = named.first() {
                return Err(format!(
                    "line {}: the program names `main`, which may run it again",
                    file.line(n.start_byte())
                ));
            }
            return Ok(After::Unread {
                at: end,
                how: "the program ends (the end of `main`) without reading it".into(),
            });
        }
        if depth >= MAX_CALL_DEPTH {
            return Err("the calls that lead to the pipeline nest too deep to follow".into());
        }
        let [call] = named[..] else {
            return Err(format!(
                "`{fname}`, which holds the pipeline, is named {} times: tpace follows a function called once",
                named.len()
            ));
        };
        let call_expr = call
            .parent()
            .filter(|p| p.kind() == "call_expression")
            .ok_or_else(|| format!("`{fname}` is not called directly"))?;
        let caller = ancestor(call_expr, "function_definition")
            .ok_or_else(|| format!("`{fname}` is called outside a function"))?;
        if caller.id() == function.id() {
            return Err(format!("`{fname}` calls itself"));
        }
        self.from(call_expr, caller, depth + 1)
    }

    fn freed(&self, at: usize) -> After {
        After::Unread {
            at,
            how: "it is freed without being read".into(),
        }
    }

    /// Mentions of the array (and, for a file-scope static, calls of functions
    /// that use it) in `node`, except inside `skip`.
    fn scan(&self, node: Node<'t>, skip: Option<Node<'t>>) -> Walk<Scan> {
        let file = self.file;
        for n in cst::descendants(node) {
            if n.kind() != "identifier" || skip.is_some_and(|s| within(n, s)) {
                continue;
            }
            let word = file.text(n);
            let line = file.line(n.start_byte());
            if self.touching.contains(word) {
                if let Some(sinks) = &self.outputs {
                    sinks.call(n)?;
                    continue;
                }
                return Err(format!(
                    "line {line}: `{word}` is called after the pipeline and uses `{}`",
                    self.name
                ));
            }
            if word != self.name {
                continue;
            }
            match file.classify(n, self.depth) {
                Mention::NoData => {}
                Mention::Element | Mention::Output if self.outputs.is_some() => {
                    if let Some(sinks) = &self.outputs {
                        sinks.mention(n, self.depth)?;
                    }
                }
                Mention::Freed => {
                    // `free(w);` as a statement of its own, on every path from here.
                    let whole = up_through_parens(n)
                        .parent()
                        .and_then(|l| l.parent())
                        .and_then(|c| c.parent());
                    if skip.is_none() && whole.is_some_and(|s| s.id() == node.id()) {
                        return Ok(Scan::Freed(node.start_byte()));
                    }
                }
                _ => {
                    return Err(format!(
                        "line {line}: the program uses `{}` after the pipeline",
                        self.name
                    ));
                }
            }
        }
        Ok(Scan::Nothing)
    }
}

/// Whether `name` is a C identifier.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The node of `kind` that spans exactly `span`.
fn find_node<'t>(root: Node<'t>, span: crate::ir::Span, kind: &str) -> Option<Node<'t>> {
    let mut node = root.descendant_for_byte_range(span.start, span.end)?;
    loop {
        if node.kind() == kind && node.start_byte() == span.start && node.end_byte() == span.end {
            return Some(node);
        }
        node = node.parent()?;
    }
}

/// The identifiers declared `name` by declarations and parameters under `node`.
fn declared_in<'t>(node: Node<'t>, name: &str, src: &str) -> Vec<Node<'t>> {
    cst::descendants(node)
        .into_iter()
        .filter(|n| matches!(n.kind(), "declaration" | "parameter_declaration"))
        .flat_map(|d| {
            let mut cursor = d.walk();
            d.children_by_field_name("declarator", &mut cursor)
                .collect::<Vec<_>>()
        })
        .filter_map(declared_identifier)
        .filter(|id| cst::text(*id, src) == name)
        .collect()
}

/// The identifier a declarator declares (`w` in `(*w)[Y] = malloc(...)`).
fn declared_identifier(mut node: Node<'_>) -> Option<Node<'_>> {
    loop {
        match node.kind() {
            "identifier" => return Some(node),
            "parenthesized_declarator" => node = node.named_child(0)?,
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}

/// Every identifier `name` under `scope`, except the declarators `decls`.
fn mentions<'t>(scope: Node<'t>, name: &str, src: &str, decls: &[Node<'t>]) -> Vec<Node<'t>> {
    cst::descendants(scope)
        .into_iter()
        .filter(|n| n.kind() == "identifier" && cst::text(*n, src) == name)
        .filter(|n| !decls.iter().any(|d| d.id() == n.id()))
        .collect()
}

/// `static`, `extern`, ... of a declaration or function definition.
fn storage_class<'s>(decl: Node, src: &'s str) -> Option<&'s str> {
    cst::named_children(decl)
        .into_iter()
        .find(|c| c.kind() == "storage_class_specifier")
        .map(|c| cst::text(c, src))
        .filter(|c| *c != "register" && *c != "auto")
}

/// The name a function definition defines.
fn function_name<'s>(f: Node, src: &'s str) -> Option<&'s str> {
    let mut node = f.child_by_field_name("declarator")?;
    loop {
        match node.kind() {
            "identifier" => return Some(cst::text(node, src)),
            "parenthesized_declarator" => node = node.named_child(0)?,
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}

/// Whether a node is inside a function definition.
fn inside_function(n: Node) -> bool {
    ancestor(n, "function_definition").is_some()
}

/// Whether an identifier is (part of) a declarator: the name being declared.
fn in_declarator(n: Node) -> bool {
    let mut node = n;
    while let Some(parent) = node.parent() {
        match parent.kind() {
            "function_declarator"
            | "pointer_declarator"
            | "array_declarator"
            | "parenthesized_declarator" => {
                if parent.child_by_field_name("declarator").map(|d| d.id()) == Some(node.id())
                    || parent.kind() == "parenthesized_declarator"
                {
                    node = parent;
                    continue;
                }
                return false;
            }
            "declaration" | "parameter_declaration" | "function_definition" => {
                return parent.child_by_field_name("declarator").map(|d| d.id()) == Some(node.id())
                    || {
                        let mut cursor = parent.walk();
                        parent
                            .children_by_field_name("declarator", &mut cursor)
                            .any(|d| d.id() == node.id())
                    };
            }
            "init_declarator" => {
                if parent.child_by_field_name("declarator").map(|d| d.id()) == Some(node.id()) {
                    node = parent;
                    continue;
                }
                return false;
            }
            _ => return false,
        }
    }
    false
}

/// The nearest ancestor of `kind`.
fn ancestor<'t>(n: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut node = n.parent()?;
    loop {
        if node.kind() == kind {
            return Some(node);
        }
        node = node.parent()?;
    }
}

/// Whether `n` is `outer` or inside it.
fn within(n: Node, outer: Node) -> bool {
    n.start_byte() >= outer.start_byte() && n.end_byte() <= outer.end_byte()
}

/// The block (or statement list) a declarator's declaration stands in.
fn enclosing_block(id: Node<'_>) -> Node<'_> {
    let mut node = id;
    while let Some(parent) = node.parent() {
        if parent.kind() == "compound_statement" {
            return parent;
        }
        node = parent;
    }
    node
}

/// Kinds whose children are statements run in order.
fn is_block_like(kind: &str) -> bool {
    matches!(
        kind,
        "compound_statement"
            | "if_statement"
            | "else_clause"
            | "for_statement"
            | "while_statement"
            | "do_statement"
            | "labeled_statement"
            | "case_statement"
            | "translation_unit"
    ) || kind.starts_with("preproc_")
}

/// How deep the liveness walks follow a file's syntax tree (C programs nest
/// far less; the pathological inputs of tests/no_panic.rs nest 100000 deep).
const MAX_NESTING: usize = 256;

/// The depth of the deepest node of `tree` (the root is 0), in one walk.
fn nesting_depth(tree: &Tree) -> usize {
    let mut cursor = tree.walk();
    let (mut depth, mut deepest) = (0usize, 0usize);
    loop {
        deepest = deepest.max(depth);
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return deepest;
            }
            depth -= 1;
        }
    }
}

/// The outermost parenthesized expression around `n` (or `n`).
fn up_through_parens(n: Node<'_>) -> Node<'_> {
    let mut node = n;
    while let Some(parent) = node.parent() {
        if parent.kind() != "parenthesized_expression" {
            break;
        }
        node = parent;
    }
    node
}

/// `n` without the parentheses and casts around its value.
fn strip(n: Node<'_>) -> Node<'_> {
    let mut node = n;
    loop {
        node = match node.kind() {
            "parenthesized_expression" => match node.named_child(0) {
                Some(c) => c,
                None => return node,
            },
            "cast_expression" => match node.child_by_field_name("value") {
                Some(c) => c,
                None => return node,
            },
            _ => return node,
        };
    }
}

/// The operator token of an expression node.
fn operator<'s>(n: Node, src: &'s str) -> Option<&'s str> {
    n.child_by_field_name("operator").map(|o| cst::text(o, src))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Jacobi time loop over `w` and `a` (double, braceless nests).
    const LOOP: &str = "\
#pragma tpace pipeline targetinout(w, a) size([0:X][0:Y]) halo([1:1][1:1])
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                w[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) * 0.25;
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                a[x][y] = w[x][y];
    }
";

    /// The file `head` (declarations and functions), then `main` whose body is
    /// `body` with `@` replaced by the time loop.
    fn program(head: &str, body: &str) -> String {
        format!(
            "#include <stdio.h>\n#include <stdlib.h>\n#define X 20\n#define Y 12\n{head}\n\
             int main(int argc, char **argv)\n{{\n    int n, x, y;\n    int steps = argc > 1 ? atoi(argv[1]) : 5;\n\
             {}\n    return 0;\n}}\n",
            body.replace('@', LOOP)
        )
    }

    /// What the program does with `name` after its first pipeline.
    fn verdict(source: &str, name: &str) -> After {
        let program = crate::front::parse("t.c", source)
            .unwrap_or_else(|d| panic!("does not parse: {d:?}\n{source}"));
        crate::analysis::validate(&program).expect("valid");
        let p = &program.pipelines[0];
        let i = p
            .arrays
            .iter()
            .position(|a| a.name == name)
            .expect("listed");
        liveness(&program, p).swap_remove(i)
    }

    fn assert_unread(source: &str, name: &str, how: &str) {
        match verdict(source, name) {
            After::Unread { how: h, .. } => assert!(h.contains(how), "`{h}` lacks `{how}`"),
            After::Read(why) => panic!("`{name}` taken as read: {why}\n{source}"),
        }
    }

    fn assert_read(source: &str, name: &str, why: &str) {
        match verdict(source, name) {
            After::Read(w) => assert!(w.contains(why), "`{w}` lacks `{why}`"),
            After::Unread { how, .. } => panic!("`{name}` taken as unread ({how}):\n{source}"),
        }
    }

    const STATICS: &str = "static double a[X][Y];\nstatic double w[X][Y];\n\
        static double sum(void)\n{\n    double s = 0.0;\n    for (int i = 0; i < X; i++)\n        \
        for (int j = 0; j < Y; j++)\n            s += a[i][j];\n    return s;\n}\n";

    const LOCALS: &str = "    double (*a)[Y] = (double (*)[Y])malloc(sizeof(double[X][Y]));\n    \
        double (*w)[Y] = malloc(sizeof *w * X);\n    if (a == NULL || !w)\n        return 1;\n    \
        for (x = 0; x < X; x++)\n        for (y = 0; y < Y; y++)\n            a[x][y] = w[x][y] = x + y;\n";

    #[test]
    fn a_file_static_temporary_that_main_never_reads_again() {
        let src = program(
            STATICS,
            "    w[0][0] = 1.0;\n@    printf(\"%f\\n\", sum());",
        );
        assert_unread(&src, "w", "the program ends");
        // `a` is read by `sum`, which main calls after the pipeline.
        assert_read(&src, "a", "`sum` is called after the pipeline");
    }

    #[test]
    fn a_local_heap_temporary_freed_unread() {
        let src = program(
            "",
            &format!(
                "{LOCALS}@    printf(\"%f\\n\", a[1][1]);\n    free(a);\n    if (w != NULL)\n        free(w);"
            ),
        );
        assert_unread(&src, "w", "returns without reading it");
        let src = program(
            "",
            &format!(
                "{LOCALS}@    printf(\"%f\\n\", a[1][1]);\n    free(w);\n    w = NULL;\n    free(a);"
            ),
        );
        assert_unread(&src, "w", "freed without being read");
        assert_read(&src, "a", "uses `a` after the pipeline");
    }

    #[test]
    fn a_local_array_of_a_function_called_twice() {
        // Each call has its own `w`: that the function runs again does not matter.
        let head = "static double relax(int steps)\n{\n    int n, x, y;\n    double a[X][Y], w[X][Y];\n    \
            for (x = 0; x < X; x++)\n        for (y = 0; y < Y; y++)\n            a[x][y] = w[x][y] = x * y;\n@    \
            return a[1][1];\n}\n"
            .replace('@', LOOP);
        let src = program(
            &head,
            "    printf(\"%f %f\\n\", relax(steps), relax(2 * steps));",
        );
        assert_unread(&src, "w", "`relax` returns without reading it");
    }

    #[test]
    fn a_file_static_in_a_static_function_called_once() {
        let head = format!("{STATICS}static void relax(int steps)\n{{\n    int n, x, y;\n@}}\n")
            .replace('@', LOOP);
        let src = program(&head, "    relax(steps);\n    printf(\"%f\\n\", sum());");
        assert_unread(&src, "w", "the program ends");
        // Called twice, or not `static`: another call may read it.
        let twice = program(&head, "    relax(steps);\n    relax(steps);");
        assert_read(&twice, "w", "named 2 times");
        let open = program(
            &head.replace("static void relax", "void relax"),
            "    relax(steps);",
        );
        assert_read(&open, "w", "is not `static`");
        // The caller's statement and what follows it in the caller count too.
        let after = program(&head, "    relax(steps);\n    printf(\"%f\\n\", w[2][2]);");
        let line = after
            .lines()
            .position(|l| l.contains("w[2][2]"))
            .expect("there")
            + 1;
        assert_read(
            &after,
            "w",
            &format!("line {line}: the program uses `w` after the pipeline"),
        );
    }

    #[test]
    fn a_local_declared_in_a_loop_body_dies_with_it() {
        let body = format!(
            "    for (int round = 0; round < 2; round++) {{\n{LOCALS}@        free(a);\n    }}\n"
        );
        let src = program("", &body.replace("return 1;", "break;"));
        assert_unread(&src, "w", "its block ends without reading it");
    }

    #[test]
    fn read_after_the_pipeline_keeps_it() {
        let src = program(STATICS, "@    printf(\"%f\\n\", w[1][1]);");
        assert_read(&src, "w", "uses `w` after the pipeline");
        // A write is a use too: the rest of it may be read later.
        let src = program(STATICS, "@    w[1][1] = 0.0;");
        assert_read(&src, "w", "uses `w` after the pipeline");
    }

    #[test]
    fn a_file_nested_past_the_limit_keeps_it() {
        // The same program as a_file_static_temporary_that_main_never_reads_again,
        // with a deeply parenthesised expression after the pipeline.
        let deep = format!(
            "    printf(\"%d\\n\", {}1{});\n@",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        let src = program(
            STATICS,
            &format!("    w[0][0] = 1.0;\n@{}", &deep[..deep.len() - 1]),
        );
        assert_read(&src, "w", "levels deep, more than the 256");
        // Shallow, the same file's verdict is made.
        let src = program(
            STATICS,
            "    w[0][0] = 1.0;\n@    printf(\"%d\\n\", (((1))));",
        );
        assert_unread(&src, "w", "the program ends");
    }

    #[test]
    fn an_address_taken_keeps_it() {
        let src = program(STATICS, "    double *p = &w[0][0];\n    (void)p;\n@");
        assert_read(&src, "w", "takes the address of an element");
        let src = program(STATICS, "    double *row = w[3];\n    (void)row;\n@");
        assert_read(&src, "w", "takes a part of it as a pointer");
    }

    #[test]
    fn passed_to_a_function_keeps_it() {
        let head =
            format!("{STATICS}static void fill(double (*m)[Y])\n{{\n    m[0][0] = 1.0;\n}}\n");
        let src = program(&head, "    fill(w);\n@");
        assert_read(&src, "w", "passed to `fill`");
    }

    #[test]
    fn an_aliasing_pointer_keeps_it() {
        let src = program(
            STATICS,
            "    double (*q)[Y] = w;\n@    printf(\"%f\\n\", q[1][1]);",
        );
        assert_read(&src, "w", "uses its address");
        let src = program(
            "",
            &format!("{LOCALS}    double (*q)[Y];\n    q = w;\n@    free(q);"),
        );
        assert_read(&src, "w", "uses its address");
    }

    #[test]
    fn a_global_with_external_linkage_keeps_it() {
        let src = program(&STATICS.replace("static double w", "double w"), "@");
        assert_read(&src, "w", "without `static`");
    }

    #[test]
    fn a_pipeline_in_a_loop_keeps_it() {
        let src = program(
            STATICS,
            "    for (int round = 0; round < 2; round++) {\n@    }",
        );
        assert_read(&src, "w", "inside a loop");
        let src = program(STATICS, "    while (steps-- > 3)\n@");
        assert_read(&src, "w", "inside a loop");
    }

    #[test]
    fn a_returned_or_stored_pointer_keeps_it() {
        let head = "static double (*relax(int steps))[Y]\n{\n    int n, x, y;\n    \
            double (*a)[Y] = malloc(sizeof(double[X][Y]));\n    double (*w)[Y] = malloc(sizeof(double[X][Y]));\n@    \
            free(a);\n    return w;\n}\n"
            .replace('@', LOOP);
        let src = program(&head, "    free(relax(steps));");
        assert_read(&src, "w", "it is returned");
        let src = program(
            "static double (*keep)[Y];",
            &format!("{LOCALS}    keep = w;\n@    free(a);"),
        );
        assert_read(&src, "w", "uses its address");
        // Memory the pointer did not get from malloc may be someone else's.
        let src = program(
            "static double store[X][Y];",
            &format!("{}@", LOCALS.replace("malloc(sizeof *w * X)", "store")),
        );
        assert_read(&src, "w", "starts as `store`");
    }

    #[test]
    fn a_parameter_keeps_it() {
        let head = "static void relax(int steps, double (*a)[Y], double (*w)[Y])\n{\n    int n, x, y;\n@}\n"
            .replace('@', LOOP);
        let src = program(
            &format!("{head}static double a0[X][Y], w0[X][Y];"),
            "    relax(steps, a0, w0);",
        );
        assert_read(&src, "w", "parameter of `relax`");
    }

    #[test]
    fn jumps_macros_and_callbacks_keep_it() {
        let src = program(STATICS, "@    goto out;\nout:\n    ;");
        assert_read(&src, "w", "uses `goto`");
        let src = program(
            &format!("#include <setjmp.h>\nstatic jmp_buf env;\n{STATICS}"),
            "    if (setjmp(env))\n        return 2;\n@",
        );
        assert_read(&src, "w", "setjmp");
        let src = program(&format!("{STATICS}#define CORNER w[0][0]\n"), "@");
        assert_read(&src, "w", "a preprocessor line names `w`");
        let src = program(&format!("#include \"grid.h\"\n{STATICS}"), "@");
        assert_read(&src, "w", "header of its own");
        // A function that reads it, run by atexit after main returns.
        let head =
            format!("{STATICS}static void show(void)\n{{\n    printf(\"%f\\n\", w[1][1]);\n}}\n");
        let src = program(&head, "    atexit(show);\n@");
        assert_read(&src, "w", "`show` uses `w` and its address is taken");
    }

    #[test]
    fn a_struct_member_keeps_it() {
        // The front end lists members (`g.w`) where it reads them; tpace follows
        // only plain variables, so such an array is taken as read.
        let src = program(STATICS, "@");
        let mut program = crate::front::parse("t.c", &src).expect("parses");
        program.pipelines[0].arrays[0].name = "g.w".into();
        let after = liveness(&program, &program.pipelines[0]);
        assert!(
            matches!(&after[0], After::Read(why) if why.contains("not a plain variable")),
            "{after:?}"
        );
    }

    #[test]
    fn names_declared_twice_keep_it() {
        let head = format!(
            "{STATICS}static double peek(void)\n{{\n    double w = 2.0;\n    return w;\n}}\n"
        );
        let src = program(&head, "@    printf(\"%f\\n\", peek());");
        assert_read(&src, "w", "declared 2 times");
    }

    /// Which ranks need `name` after the first pipeline.
    fn receivers_of(source: &str, name: &str) -> Receivers {
        let program = crate::front::parse("t.c", source)
            .unwrap_or_else(|d| panic!("does not parse: {d:?}\n{source}"));
        crate::analysis::validate(&program).expect("valid");
        let p = &program.pipelines[0];
        let i = p
            .arrays
            .iter()
            .position(|a| a.name == name)
            .expect("listed");
        receivers(&program, p).swap_remove(i)
    }

    fn assert_root(source: &str, name: &str, how: &str) {
        match receivers_of(source, name) {
            Receivers::Root(h) => assert!(h.contains(how), "`{h}` lacks `{how}`"),
            Receivers::Every(why) => panic!("`{name}` goes to every rank: {why}\n{source}"),
        }
    }

    fn assert_every(source: &str, name: &str, why: &str) {
        match receivers_of(source, name) {
            Receivers::Every(w) => assert!(w.contains(why), "`{w}` lacks `{why}`"),
            Receivers::Root(how) => panic!("`{name}` goes to rank 0 alone ({how}):\n{source}"),
        }
    }

    /// A checksum accumulated in a local and printed, directly or through a static
    /// function that returns it, or the array written out with fwrite: rank 0 alone.
    #[test]
    fn only_output_after_the_pipeline_goes_to_rank_zero() {
        let direct = program(
            STATICS,
            "@    double s = 0.0;\n    for (x = 0; x < X; x++)\n        for (y = 0; y < Y; y++) {\n            \
             const double w8 = (double)(x % 3 + 1);\n            s += fabs(a[x][y]) * w8;\n        }\n    \
             printf(\"%f %f\\n\", s, x > 1 ? a[1][1] : -a[2][2]);",
        );
        assert_root(&direct, "a", "printed by `printf` at line");
        let through = program(STATICS, "@    printf(\"%f\\n\", sum());");
        assert_root(&through, "a", "printed by `printf`");
        let file = program(
            STATICS,
            "@    FILE *f = fopen(\"out.bin\", \"wb\");\n    if (f) {\n        \
             fwrite(a, sizeof a[0][0], X * Y, f);\n        fwrite(a[3], sizeof(double), Y, f);\n        fclose(f);\n    }",
        );
        assert_root(&file, "a", "written out by `fwrite`");
        let local = program(
            "",
            &format!(
                "{LOCALS}@    printf(\"%.3f\\n\", a[2][3] + a[3][2]);\n    free(a);\n    free(w);"
            ),
        );
        assert_root(&local, "a", "printed");
    }

    /// Whatever can change what every rank does next keeps the array on every rank.
    #[test]
    fn what_may_steer_the_ranks_goes_to_every_rank() {
        let cases = [
            // A branch on a value.
            (
                "@    if (a[1][1] > 0.5)\n        printf(\"big\\n\");",
                "a branch or loop depends on it",
            ),
            // A loop bound.
            (
                "@    for (x = 0; x < a[0][0]; x++)\n        printf(\"x\\n\");",
                "a branch or loop depends on it",
            ),
            // The exit status.
            ("@    return a[1][1] > 0.0;", "it is returned"),
            // An index.
            (
                "@    printf(\"%f\\n\", a[(int)a[0][0]][0]);",
                "converted to `int`",
            ),
            // An integer (a stale value could overflow its conversion).
            (
                "@    int k = a[1][1];\n    printf(\"%d\\n\", k);",
                "not a plain `float` or `double` local",
            ),
            // Into a function tpace does not know.
            (
                "@    double v = a[1][1];\n    exit(v > 0.0);",
                "it is passed to `exit`",
            ),
            // A value used in `&&`.
            (
                "@    double t = a[1][1];\n    t > 0.0 && printf(\"x\\n\");",
                "`&&`, `||`",
            ),
            // Written after the pipeline.
            (
                "@    a[0][0] = 1.0;\n    printf(\"%f\\n\", a[0][0]);",
                "writes `a` after the pipeline",
            ),
            // Stored where the next statement may read it as anything.
            ("@    w[0][0] = a[1][1];", "it is stored in `w[0][0]`"),
        ];
        for (body, why) in cases {
            assert_every(&program(STATICS, body), "a", why);
        }
        // A pipeline inside a loop: the next round reads it.
        let looped = program(
            STATICS,
            "    for (int r = 0; r < 2; r++) {\n@    }\n    printf(\"%f\\n\", sum());",
        );
        assert_every(&looped, "a", "inside a loop");
        // A static function that reads it and steers what it returns.
        let head = format!(
            "{STATICS}static double big(void)\n{{\n    if (a[0][0] > 1.0)\n        return 1.0;\n    return 0.0;\n}}\n"
        );
        assert_every(
            &program(&head, "@    printf(\"%f\\n\", big());"),
            "a",
            "a branch or loop depends on it",
        );
        // A value kept in a global.
        let head = format!("{STATICS}static double kept;\n");
        assert_every(
            &program(&head, "@    kept = a[1][1];\n    printf(\"%f\\n\", kept);"),
            "a",
            "not a local of `main`",
        );
    }
}
