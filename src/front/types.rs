//! C types as the front end needs them: a declaration's facts (how many
//! subscripts it takes, its layout), element and scalar types resolved through
//! macros and typedefs, and struct fields, looked up in the file and in the
//! preprocessed headers it includes.

use super::cst::{descendants, named_children, parse_c, text};
use super::macros::MacroTable;
use super::preprocess::Env;
use crate::ir::{ElemType, Layout};
use tree_sitter::{Node, Tree};

/// Most typedef and macro steps followed when resolving a type.
const MAX_STEPS: usize = 16;

/// Words of the C arithmetic types.
const ARITHMETIC: [&str; 10] = [
    "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool", "bool",
];

/// The C library's integer typedefs, arithmetic where their headers are not read.
const STANDARD_INTEGERS: [&str; 14] = [
    "size_t",
    "ptrdiff_t",
    "ssize_t",
    "intptr_t",
    "uintptr_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "intmax_t",
];

/// Qualifiers that do not change which type a declaration has for tpace.
const QUALIFIERS: [&str; 5] = ["const", "volatile", "restrict", "static", "register"];

/// What a declaration says about one name, owned (it may come from a macro's
/// expansion, parsed apart from the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclInfo {
    /// The type specifier as written (`float`, `DATA_TYPE`, `struct Mat`, `Matrix`).
    pub ty: String,
    /// The declarator as written (or as its declaration macro expands).
    pub declarator: String,
    /// Subscripts the declarator takes: `a[X][Y]` 2, `(*a)[Y]` 2, `*a` 1, `a` 0.
    pub depth: usize,
    /// The grid layout, if the declarator declares one.
    pub layout: Option<Layout>,
    /// Whether the declarator is the bare name (a scalar or a struct value).
    pub plain: bool,
    /// Whether it is `*name` (a pointer to one object or a flat array).
    pub pointer: bool,
    /// The size of the first array dimension (`C` in `a[C][X]`), as written.
    pub first_dim: Option<String>,
}

impl DeclInfo {
    /// The facts of `declarator` in `decl` (both nodes of a tree over `source`).
    pub fn of(decl: Node, declarator: Node, source: &str) -> DeclInfo {
        let ty = decl
            .child_by_field_name("type")
            .map_or("", |t| text(t, source))
            .to_string();
        let mut first = declarator;
        while let Some(inner) = first
            .child_by_field_name("declarator")
            .filter(|d| d.kind() == "array_declarator")
        {
            first = inner;
        }
        let first_dim = (first.kind() == "array_declarator")
            .then(|| first.child_by_field_name("size"))
            .flatten()
            .map(|s| text(s, source).trim().to_string());
        DeclInfo {
            ty,
            declarator: text(declarator, source).to_string(),
            depth: declared_depth(declarator),
            layout: layout_of(declarator),
            plain: is_name(declarator.kind()),
            pointer: declarator.kind() == "pointer_declarator"
                && declarator
                    .child_by_field_name("declarator")
                    .is_some_and(|d| is_name(d.kind())),
            first_dim,
        }
    }
}

/// Whether a node kind is a declared name (a variable's, a field's, a typedef's).
fn is_name(kind: &str) -> bool {
    matches!(kind, "identifier" | "field_identifier" | "type_identifier")
}

/// Number of subscripts a declarator takes: `a[X][Y]` 2, `(*a)[Y]` 2, `*a` 1.
pub fn declared_depth(mut node: Node) -> usize {
    let mut depth = 0;
    loop {
        match node.kind() {
            "array_declarator" | "pointer_declarator" => depth += 1,
            "parenthesized_declarator" => match node.named_child(0) {
                Some(n) => {
                    node = n;
                    continue;
                }
                None => return depth,
            },
            _ => return depth,
        }
        match node.child_by_field_name("declarator") {
            Some(n) => node = n,
            None => return depth,
        }
    }
}

/// The grid layout a declarator declares: `T a[X][Y]`, `T (*a)[Y]`, `T *a`.
pub fn layout_of(declarator: Node) -> Option<Layout> {
    match declarator.kind() {
        "pointer_declarator" => {
            let inner = declarator.child_by_field_name("declarator")?;
            is_name(inner.kind()).then_some(Layout::Flat)
        }
        "array_declarator" => {
            let mut inner = declarator;
            while inner.kind() == "array_declarator" {
                inner = inner.child_by_field_name("declarator")?;
            }
            match inner.kind() {
                k if is_name(k) => Some(Layout::Static),
                "parenthesized_declarator" => {
                    let ptr = inner.named_child(0)?;
                    let id = ptr.child_by_field_name("declarator")?;
                    (ptr.kind() == "pointer_declarator" && is_name(id.kind()))
                        .then_some(Layout::PointerToArray)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The name a declarator declares (a variable's, a field's or a typedef's).
pub fn declared_name<'s>(mut node: Node, source: &'s str) -> Option<&'s str> {
    for _ in 0..256 {
        match node.kind() {
            k if is_name(k) => return Some(text(node, source)),
            "parenthesized_declarator" => node = node.named_child(0)?,
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
    None
}

/// The declarators of a declaration (or field declaration), initialisers unwrapped.
pub fn declarators(decl: Node) -> Vec<Node> {
    let mut cursor = decl.walk();
    decl.children_by_field_name("declarator", &mut cursor)
        .map(|d| {
            if d.kind() == "init_declarator" {
                d.child_by_field_name("declarator").unwrap_or(d)
            } else {
                d
            }
        })
        .collect()
}

/// A declarator written as a declaration macro (`POLYBENCH_2D(A,N,N,n,n)`,
/// which the C grammar reads as a function declarator) expanded and parsed:
/// what it declares, or `None` when it is no such macro.
pub fn expand_declarator(
    decl: Node,
    declarator: Node,
    source: &str,
    macros: &MacroTable,
) -> Option<(String, DeclInfo)> {
    if declarator.kind() != "function_declarator" {
        return None;
    }
    let callee = declarator.child_by_field_name("declarator")?;
    let is_macro = callee.kind() == "identifier"
        && macros
            .get(text(callee, source))
            .is_some_and(|m| m.params.is_some());
    if !is_macro {
        return None;
    }
    let expanded = macros.expand(text(declarator, source))?;
    let ty = decl
        .child_by_field_name("type")
        .map_or("int", |t| text(t, source));
    let wrapped = format!("{ty} {expanded};");
    let tree = parse_c(&wrapped);
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let d = root.named_child(0).filter(|d| d.kind() == "declaration")?;
    let inner = declarators(d).into_iter().next()?;
    let name = declared_name(inner, &wrapped)?.to_string();
    let mut info = DeclInfo::of(d, inner, &wrapped);
    info.ty = ty.to_string();
    Some((name, info))
}

/// Where types are looked up: the file, then the headers it includes.
pub struct Types<'a> {
    /// The macros in effect.
    pub macros: &'a MacroTable,
    file: (&'a Tree, &'a str),
    headers: Option<(Tree, &'a str)>,
}

/// A struct's field list and the source text it is in.
type Fields<'t> = (Node<'t>, &'t str);

impl<'a> Types<'a> {
    /// Types of the file `tree` parses (`source` its text), with `env`'s macros and headers.
    pub fn new(env: &'a Env, tree: &'a Tree, source: &'a str) -> Types<'a> {
        let headers =
            (!env.headers.is_empty()).then(|| (parse_c(&env.headers), env.headers.as_str()));
        Types {
            macros: &env.macros,
            file: (tree, source),
            headers,
        }
    }

    /// Candidate declarations, with their source text: every node of the file
    /// (it is small, and may declare types locally), then the headers' file-scope
    /// declarations and the types they spell out.
    fn candidates(&self) -> Vec<(Node<'_>, &str)> {
        let mut out: Vec<(Node, &str)> = descendants(self.file.0.root_node())
            .into_iter()
            .map(|n| (n, self.file.1))
            .collect();
        if let Some((tree, text)) = &self.headers {
            for n in named_children(tree.root_node()) {
                out.push((n, *text));
                if let Some(t) = n.child_by_field_name("type") {
                    out.push((t, *text));
                }
            }
        }
        out
    }

    /// The typedef of `name`: its type node and declarator, in the file or a header.
    fn typedef(&self, name: &str) -> Option<(Node<'_>, Node<'_>, &str)> {
        for (d, src) in self.candidates() {
            if d.kind() != "type_definition" {
                continue;
            }
            for decl in declarators(d) {
                if declared_name(decl, src) == Some(name) {
                    return Some((d.child_by_field_name("type")?, decl, src));
                }
            }
        }
        None
    }

    /// One step of resolution: a macro's expansion or a plain typedef's type.
    fn step(&self, ty: &str) -> Option<String> {
        let ty = unqualified(ty);
        if ty.split_whitespace().count() != 1 {
            return None;
        }
        if let Some(m) = self.macros.get(&ty).filter(|m| m.params.is_none()) {
            return self.macros.expand(&m.body);
        }
        let (t, declarator, src) = self.typedef(&ty)?;
        is_name(declarator.kind()).then(|| text(t, src).to_string())
    }

    /// The arithmetic type `ty` names through macros and typedefs (`DATA_TYPE`
    /// -> `double`, `real` -> `double`), or `None` if it names another type.
    pub fn arithmetic(&self, ty: &str) -> Option<String> {
        let mut cur = ty.to_string();
        for _ in 0..MAX_STEPS {
            let plain = unqualified(&cur);
            if !plain.is_empty() && plain.split_whitespace().all(|w| ARITHMETIC.contains(&w)) {
                return Some(plain);
            }
            match self.step(&cur) {
                Some(next) => cur = next,
                None if STANDARD_INTEGERS.contains(&plain.as_str()) => return Some(plain),
                None => return None,
            }
        }
        None
    }

    /// The element type `ty` names, or what it resolves to (for the message) if
    /// that is not `float` or `double`.
    pub fn elem(&self, ty: &str) -> Result<ElemType, String> {
        match self.arithmetic(ty).as_deref() {
            Some("float") => Ok(ElemType::Float),
            Some("double") => Ok(ElemType::Double),
            Some(other) => Err(other.to_string()),
            None => Err(self.last_step(ty)),
        }
    }

    /// How far `ty` resolves (for messages).
    fn last_step(&self, ty: &str) -> String {
        let mut cur = ty.to_string();
        for _ in 0..MAX_STEPS {
            match self.step(&cur) {
                Some(next) => cur = next,
                None => break,
            }
        }
        unqualified(&cur)
    }

    /// The type text a generated declaration should use for a variable of
    /// type `ty`: the arithmetic type it names, else the user's text.
    pub fn scalar_text(&self, ty: &str) -> String {
        self.arithmetic(ty).unwrap_or_else(|| ty.to_string())
    }

    /// The struct `ty` names (through macros and typedefs) and the pointer
    /// levels typedefs add (`typedef struct Mat *MatP`): its field list.
    pub fn struct_of(&self, ty: &str) -> Option<(Fields<'_>, usize, String)> {
        let mut cur = unqualified(ty);
        let mut pointers = 0;
        for _ in 0..MAX_STEPS {
            if let Some(tag) = cur
                .strip_prefix("struct ")
                .or_else(|| cur.strip_prefix("union "))
            {
                let tag = tag.trim();
                return self.struct_body(tag).map(|f| (f, pointers, cur.clone()));
            }
            if let Some(m) = self.macros.get(&cur).filter(|m| m.params.is_none()) {
                cur = unqualified(&self.macros.expand(&m.body)?);
                continue;
            }
            let (t, declarator, src) = self.typedef(&cur)?;
            match declarator.kind() {
                k if is_name(k) => {}
                "pointer_declarator"
                    if declarator
                        .child_by_field_name("declarator")
                        .is_some_and(|d| is_name(d.kind())) =>
                {
                    pointers += 1
                }
                _ => return None,
            }
            // `typedef struct { ... } Matrix;`: the body is the typedef's own.
            if matches!(t.kind(), "struct_specifier" | "union_specifier")
                && let Some(body) = t.child_by_field_name("body")
            {
                return Some(((body, src), pointers, cur.clone()));
            }
            cur = unqualified(text(t, src));
        }
        None
    }

    /// The field list of `struct tag`, wherever it is defined.
    fn struct_body(&self, tag: &str) -> Option<Fields<'_>> {
        for (s, src) in self.candidates() {
            if !matches!(s.kind(), "struct_specifier" | "union_specifier") {
                continue;
            }
            let named = s
                .child_by_field_name("name")
                .is_some_and(|n| text(n, src) == tag);
            if let (true, Some(body)) = (named, s.child_by_field_name("body")) {
                return Some((body, src));
            }
        }
        None
    }
}

/// A field's declaration in a struct's field list; the names of all fields if none matches.
pub fn field(fields: Fields<'_>, name: &str) -> Result<DeclInfo, Vec<String>> {
    let (body, src) = fields;
    let mut all = Vec::new();
    for f in named_children(body)
        .into_iter()
        .filter(|n| n.kind() == "field_declaration")
    {
        for d in declarators(f) {
            if let Some(n) = declared_name(d, src) {
                if n == name {
                    return Ok(DeclInfo::of(f, d, src));
                }
                all.push(n.to_string());
            }
        }
    }
    Err(all)
}

/// A type's text without qualifiers and storage classes, blanks collapsed.
fn unqualified(ty: &str) -> String {
    ty.split_whitespace()
        .filter(|w| !QUALIFIERS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "#define DATA_TYPE double\n#define REAL real\ntypedef double real;\ntypedef int cell;\n\
        struct Mat { float *m; int mnums, mrows; };\ntypedef struct Mat Matrix;\ntypedef struct Mat *MatP;\n\
        typedef struct { double u[4][8]; int n; } Field;\n";

    #[test]
    fn resolves_through_macros_and_typedefs() {
        let tree = parse_c(SRC);
        let env = Env::from_source(SRC, &Default::default());
        let t = Types::new(&env, &tree, SRC);
        assert_eq!(t.elem("DATA_TYPE"), Ok(ElemType::Double));
        assert_eq!(t.elem("REAL"), Ok(ElemType::Double));
        assert_eq!(t.elem("const float"), Ok(ElemType::Float));
        assert_eq!(t.elem("cell"), Err("int".into()));
        assert_eq!(t.elem("Matrix"), Err("struct Mat".into()));
        assert_eq!(t.scalar_text("real"), "double");
        assert_eq!(t.scalar_text("Matrix"), "Matrix");
    }

    #[test]
    fn finds_struct_fields() {
        let tree = parse_c(SRC);
        let env = Env::from_source(SRC, &Default::default());
        let t = Types::new(&env, &tree, SRC);
        let (fields, ptrs, _) = t.struct_of("Matrix").unwrap();
        assert_eq!(ptrs, 0);
        let m = field(fields, "m").unwrap();
        assert_eq!((m.ty.as_str(), m.layout), ("float", Some(Layout::Flat)));
        assert_eq!(field(fields, "q").unwrap_err(), ["m", "mnums", "mrows"]);
        assert_eq!(t.struct_of("MatP").unwrap().1, 1);
        let (fields, _, _) = t.struct_of("Field").unwrap();
        let u = field(fields, "u").unwrap();
        assert_eq!(
            (u.depth, u.layout, u.first_dim.as_deref()),
            (2, Some(Layout::Static), Some("4"))
        );
    }
}
