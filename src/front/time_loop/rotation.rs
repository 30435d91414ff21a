//! Pointer rotation at the end of a step: double buffering by a pointer swap
//! (`float *tmp = A0; A0 = Anext; Anext = tmp;`, Parboil's stencil) or a
//! three-level scheme (`t = u0; u0 = u1; u1 = u2; u2 = t;`). The statements
//! stay host statements (the host replay of the time loop runs them, so the
//! pointers end as the loop leaves them); what they do to the listed arrays
//! becomes a [`Rotation`]: at each step every pointer names the storage
//! another one named before, which the runtime follows on the device.
//!
//! Accepted: after the step's last sweep, plain assignments `x = y;` and
//! declarations `T *x = y;` of listed pointer variables and temporaries of
//! their own type, whose net effect is a permutation of the listed arrays'
//! storage. Anything else that assigns a listed pointer is refused (by
//! [`super::host::check`] where it is not a swap at all).

use super::decls::lookup;
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, named_children, span, text};
use crate::front::types::{DeclInfo, Types};
use crate::ir::{Array, HostStatement, Intent, Rotation};
use std::collections::BTreeMap;
use tree_sitter::{Node, Tree};

/// One step of a rotation: `lhs = rhs`, and the declaration of `lhs` when the
/// statement declares it.
struct Move<'t> {
    lhs: String,
    rhs: String,
    decl: Option<(Node<'t>, Node<'t>)>,
    at: Node<'t>,
}

/// `x = y` (identifiers), or `T *x = y;` declaring one name.
fn moves_of<'t>(stmt: Node<'t>, source: &str) -> Option<Vec<Move<'t>>> {
    let ident = |n: Node| (n.kind() == "identifier").then(|| text(n, source).to_string());
    match stmt.kind() {
        "compound_statement" => {
            let mut out = Vec::new();
            for item in body_items(stmt)
                .into_iter()
                .filter(|n| n.kind() != "comment")
            {
                out.extend(moves_of(item, source)?);
            }
            Some(out)
        }
        "expression_statement" => {
            let e = stmt.named_child(0)?;
            let op = e.child_by_field_name("operator")?;
            if e.kind() != "assignment_expression" || text(op, source) != "=" {
                return None;
            }
            Some(vec![Move {
                lhs: ident(e.child_by_field_name("left")?)?,
                rhs: ident(e.child_by_field_name("right")?)?,
                decl: None,
                at: stmt,
            }])
        }
        "declaration" => {
            let inits: Vec<Node> = named_children(stmt)
                .into_iter()
                .filter(|n| n.kind() == "init_declarator")
                .collect();
            let [init] = inits.as_slice() else {
                return None;
            };
            let declarator = init.child_by_field_name("declarator")?;
            Some(vec![Move {
                lhs: crate::front::types::declared_name(declarator, source)?.to_string(),
                rhs: ident(init.child_by_field_name("value")?)?,
                decl: Some((stmt, declarator)),
                at: stmt,
            }])
        }
        _ => None,
    }
}

/// A declarator's shape without its name and qualifiers (`(*)[M]` for `(*u)[M]`).
fn shape(info: &DeclInfo, name: &str) -> String {
    let without: String = crate::text::rename_identifiers(&info.declarator, &|w| {
        (w == name || w == "restrict" || w == "const" || w == "volatile").then(String::new)
    });
    without.split_whitespace().collect()
}

/// The pointer rotation the host statements `host` do at the end of the step
/// (`sweeps` sweeps long), if any, with the indices of those statements in
/// `host`; or why what they do to the listed arrays' pointers can not be followed.
#[allow(clippy::too_many_arguments)] // the pipeline read so far, and the file
pub fn find(
    host: &[HostStatement],
    sweeps: usize,
    arrays: &[Array],
    time_loop: Node,
    tree: &Tree,
    source: &str,
    types: &Types,
) -> DiagResult<Option<(Rotation, Vec<usize>)>> {
    let root = tree.root_node();
    let listed = |name: &str| {
        arrays
            .iter()
            .position(|a| a.name == name && a.component.is_none())
    };
    let mut moves: Vec<Move> = Vec::new();
    let mut used = Vec::new();
    let mut errors = Vec::new();
    for (i, h) in host.iter().enumerate() {
        let Some(node) = root.descendant_for_byte_range(h.span.start, h.span.end) else {
            continue;
        };
        let Some(these) = moves_of(node, source) else {
            continue;
        };
        let names_an_array = these
            .iter()
            .any(|m| listed(&m.lhs).is_some() || listed(&m.rhs).is_some());
        if !names_an_array {
            continue;
        }
        if h.before < sweeps {
            errors.push(Diagnostic::new(
                span(node),
                "listed arrays' pointers are exchanged between two sweeps of a step",
                "a swap in the middle of the step",
                "tpace follows pointers exchanged at the end of a step, after its last sweep: move \
                 the exchange there (the sweeps after it then name the arrays the other way round)",
            ));
            continue;
        }
        used.push(i);
        moves.extend(these);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if moves.is_empty() {
        return Ok(None);
    }
    // What each name holds after the statements: the value some name held before.
    let mut holds: BTreeMap<String, String> = BTreeMap::new();
    for m in &moves {
        let value = holds.get(&m.rhs).cloned().unwrap_or_else(|| m.rhs.clone());
        holds.insert(m.lhs.clone(), value);
    }
    let mut takes: Vec<usize> = (0..arrays.len()).collect();
    for (a, array) in arrays.iter().enumerate() {
        let Some(value) = holds.get(&array.name) else {
            continue;
        };
        let at = moves
            .iter()
            .rev()
            .find(|m| m.lhs == array.name)
            .map(|m| m.at)
            .expect("assigned by a move");
        match listed(value) {
            Some(b) if array.component.is_none() => takes[a] = b,
            _ => errors.push(Diagnostic::new(
                span(at),
                format!(
                    "after the step, `{}` holds what `{value}` held before it, which is not a listed array",
                    array.name
                ),
                "not a rotation of the listed arrays",
                "tpace follows pointers of listed arrays exchanged among themselves at the end of a \
                 step, through a temporary (`float *t = a; a = b; b = t;`): every listed pointer \
                 assigned there must end up naming one of the listed arrays, each a different one",
            )),
        }
    }
    // A permutation: no two pointers name one array's storage.
    for b in 0..takes.len() {
        if let Some(a) = (0..b).find(|a| takes[*a] == takes[b]) {
            errors.push(Diagnostic::new(
                span(moves[0].at),
                format!(
                    "after the step, `{}` and `{}` both name the storage of `{}`",
                    arrays[a].name, arrays[b].name, arrays[takes[b]].name
                ),
                "two pointers to one array",
                "exchange the pointers through a temporary so that each names a different \
                 array: `float *t = a; a = b; b = t;`",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // The temporaries and the arrays of a cycle are of one type and layout.
    let declared = |m: &Move, name: &str| -> Option<DeclInfo> {
        match (m.decl, m.lhs == name) {
            (Some((d, declarator)), true) => Some(DeclInfo::of(d, declarator, source)),
            _ => lookup(name, m.at, tree, source, types)
                .or_else(|| lookup(name, time_loop, tree, source, types)),
        }
    };
    let first_array = moves
        .iter()
        .find_map(|m| listed(&m.rhs).or(listed(&m.lhs)))
        .expect("some move names an array");
    let reference = &arrays[first_array];
    let reference_info = moves
        .iter()
        .find(|m| m.lhs == reference.name || m.rhs == reference.name)
        .and_then(|m| declared(m, &reference.name));
    for m in &moves {
        for name in [&m.lhs, &m.rhs] {
            let (Some(info), Some(want)) = (declared(m, name), reference_info.as_ref()) else {
                continue;
            };
            let same = types.elem(&info.ty).ok() == types.elem(&want.ty).ok()
                && types.elem(&info.ty).is_ok()
                && shape(&info, name) == shape(want, &reference.name);
            if !same {
                let wanted = format!(
                    "{} {}",
                    want.ty.trim(),
                    crate::text::rename_identifiers(&want.declarator, &|w| {
                        (w == reference.name).then(|| name.to_string())
                    })
                );
                errors.push(Diagnostic::new(
                    span(m.at),
                    format!(
                        "`{name}` is declared `{} {}`, not of the type of the listed `{}` (`{} {}`) it is exchanged with",
                        info.ty.trim(),
                        info.declarator,
                        reference.name,
                        want.ty.trim(),
                        want.declarator
                    ),
                    "a swap through another type",
                    format!(
                        "exchange the pointers through a temporary of their own type: declare it \
                         `{wanted}`"
                    ),
                ));
            }
        }
    }
    for (a, &b) in takes.iter().enumerate() {
        if a != b && arrays[a].intent != arrays[b].intent {
            let (inout, only_in) = if arrays[a].intent == Intent::In {
                (b, a)
            } else {
                (a, b)
            };
            errors.push(Diagnostic::new(
                arrays[only_in].span.clone(),
                format!(
                    "`{}` is listed in targetin, but its pointer is exchanged with `{}`'s, which the \
                     sweeps write",
                    arrays[only_in].name, arrays[inout].name
                ),
                "storage written under another name",
                format!(
                    "list `{}` in targetinout: the sweeps write its storage in the steps where \
                     `{}` names it",
                    arrays[only_in].name, arrays[inout].name
                ),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if takes.iter().enumerate().all(|(a, b)| a == *b) {
        return Ok(None);
    }
    let statements = used.iter().map(|i| host[*i].span.clone()).collect();
    Ok(Some((Rotation { takes, statements }, used)))
}
