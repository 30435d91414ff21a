//! What a target's own device file (CUDA's `.cu`, compiled as C++) takes from
//! the user's declarations (`Program::declarations`: the file's and its own
//! headers' preprocessor lines and type declarations): the macro definitions
//! and type declarations its kernels use, those they use in turn, and the
//! conditional groups around them (`#if`, `#ifdef`, `#else`, `#endif`), so
//! that `-D` flags given when the device file is built choose as they do for
//! the host program; system headers' `#include` lines stay. Everything else —
//! the headers' functions and variables, `#error` lines, declarations no
//! kernel names — stays in the host program alone, so that C the device
//! compiler would refuse (`const char *b = p;` from a `void *`, a member
//! named `class`) never reaches it.

use crate::ir::{Declaration, DeclarationKind as Kind, Program};
use crate::text::identifiers;
use std::collections::BTreeSet;

/// The declarations device code of text `device` needs, in order.
pub fn needed<'p>(program: &'p Program, device: &str) -> Vec<&'p Declaration> {
    let decls = &program.declarations;
    let kinds: Vec<&Kind> = decls.iter().map(|d| &d.kind).collect();
    let groups = Groups::of(&kinds);
    let mut names: BTreeSet<String> = identifiers(device).into_iter().map(String::from).collect();
    let mut kept = vec![false; decls.len()];
    loop {
        let mut changed = false;
        for i in 0..decls.len() {
            if kept[i] {
                continue;
            }
            let wanted = match kinds[i] {
                Kind::Define(name) | Kind::Undef(name) => names.contains(name),
                Kind::Type(declared) => declared.iter().any(|n| names.contains(n)),
                Kind::Include => true,
                _ => false,
            };
            if !wanted {
                continue;
            }
            changed = true;
            // The item, and every group around it with all its branch lines, whose
            // conditions then need their macros.
            let mut lines = vec![i];
            let mut group = groups.parent[i];
            while let Some(g) = group {
                lines.extend(&groups.lines[g]);
                group = groups.parent[groups.lines[g][0]];
            }
            for line in lines {
                if !kept[line] {
                    kept[line] = true;
                    if !matches!(kinds[line], Kind::Undef(_)) {
                        names.extend(identifiers(&decls[line].text).into_iter().map(String::from));
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    decls
        .iter()
        .zip(kept)
        .filter(|(_, k)| *k)
        .map(|(d, _)| d)
        .collect()
}

/// Whether a declaration opens, continues or closes a conditional group
/// (`Some(1)`, `Some(0)`, `Some(-1)`), for a writer that must balance them.
pub fn nesting(declaration: &Declaration) -> Option<i32> {
    match declaration.kind {
        Kind::Open => Some(1),
        Kind::Branch => Some(0),
        Kind::Close => Some(-1),
        _ => None,
    }
}

/// The conditional groups of a list of declarations.
struct Groups {
    /// Per declaration, the group it is in (the index of the group's opening
    /// line); a group's own branch lines and `#endif` are in it.
    parent: Vec<Option<usize>>,
    /// Per group (by the index of its opening line; empty for other lines),
    /// its opening, branch and closing lines.
    lines: Vec<Vec<usize>>,
}

impl Groups {
    fn of(kinds: &[&Kind]) -> Groups {
        let mut parent = vec![None; kinds.len()];
        let mut lines = vec![Vec::new(); kinds.len()];
        let mut open: Vec<usize> = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            match k {
                Kind::Open => {
                    parent[i] = open.last().copied();
                    lines[i].push(i);
                    open.push(i);
                }
                Kind::Branch | Kind::Close => {
                    if let Some(&g) = open.last() {
                        // The group's own lines stand with its opening line.
                        parent[i] = parent[g];
                        lines[g].push(i);
                        if **k == Kind::Close {
                            open.pop();
                        }
                    }
                }
                _ => parent[i] = open.last().copied(),
            }
        }
        Groups { parent, lines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// jacobi2d.c with `lines` above it, and of its declarations only those
    /// (as the front end reads them: lowering takes them from the IR).
    fn program(lines: &[&str]) -> Program {
        let prefix = format!("{}\n", lines.join("\n"));
        let source = format!("{prefix}{}", include_str!("../../examples/jacobi2d.c"));
        let mut p = crate::plan::compile_source("t.c", &source)
            .expect("jacobi2d compiles")
            .program;
        p.declarations.retain(|d| d.at < prefix.len());
        assert_eq!(p.declarations.len(), lines.len(), "{:?}", p.declarations);
        p
    }

    fn kept(p: &Program, device: &str) -> Vec<String> {
        needed(p, device).iter().map(|d| d.text.clone()).collect()
    }

    #[test]
    fn groups_open_continue_and_close() {
        let p = program(&[
            "# if defined(A)",
            "#elif B",
            "#endif /* A */",
            "#define A 1",
        ]);
        let d = &p.declarations;
        assert_eq!(nesting(&d[0]), Some(1));
        assert_eq!(nesting(&d[1]), Some(0));
        assert_eq!(nesting(&d[2]), Some(-1));
        assert_eq!(nesting(&d[3]), None);
    }

    #[test]
    fn only_what_the_kernels_use_with_the_groups_around_it() {
        let p = program(&[
            "#include <math.h>",
            "#ifndef H_H",
            "#define H_H",
            "#if !defined(N) && defined(LARGE)",
            "#define N 512",
            "#elif !defined(N)",
            "#define N 64",
            "#endif",
            "#define UNUSED(x) malloc(x)",
            "#define REAL float",
            "#define COEF(x) ((REAL)(x))",
            "typedef REAL real_t;",
            "typedef struct { int class; } info;",
            "#if __STDC_VERSION__ < 199901L",
            "#error \"C99\"",
            "#endif",
            "#ifdef UNUSED_BRANCH",
            "#define OTHER 1",
            "#endif",
            "#endif",
        ]);
        assert_eq!(
            kept(&p, "b[i] = COEF(0.5) * a[i] + N;"),
            [
                "#include <math.h>",
                "#ifndef H_H",
                "#define H_H",
                "#if !defined(N) && defined(LARGE)",
                "#define N 512",
                "#elif !defined(N)",
                "#define N 64",
                "#endif",
                "#define REAL float",
                "#define COEF(x) ((REAL)(x))",
                "#endif",
            ]
        );
        let with_type = kept(&p, "real_t c = 1;");
        assert!(with_type.contains(&"typedef REAL real_t;".to_string()));
        assert!(with_type.contains(&"#define REAL float".to_string()));
        assert!(
            !with_type
                .iter()
                .any(|t| t.contains("class") || t.contains("N "))
        );
    }
}
