//! `while` and `do ... while` time loops counted by a variable:
//!
//! ```c
//! step = 0;                          count = 0;
//! while (step < steps) {             do {
//!     ... sweeps ...                     ... sweeps ...
//!     step++;                        } while (++count < numiter);
//! }
//! ```
//!
//! The counter is set before the loop (its value there is the first step's);
//! the loop advances it by one once a step, either with a statement of its own
//! at the top level of the body (`step++;`, `++step;`, `step += 1;`,
//! `step = step + 1;`) or, in a `do` loop, in the condition (`++count < N`);
//! nothing else in the body writes it or the bound, and the condition reads no
//! array and calls no function, so the trip count is known when the loop starts
//! (the tpace paper, §3.2). Sweeps see the counter's value at the start of
//! their step, so a sweep after the advance may not read it (a host statement
//! may: the host replays the advance in its place).

use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::{body_items, descendants, span, text};
use crate::ir::{Span, Sweep, TimeForm, TimeLoop};
use crate::text::mentions;
use tree_sitter::Node;

/// The forms a counter's advance may take, blanks removed.
pub fn advances(var: &str) -> [String; 4] {
    [
        format!("{var}++"),
        format!("++{var}"),
        format!("{var}+=1"),
        format!("{var}={var}+1"),
    ]
}

/// What to write, for messages.
fn form(node: Node) -> &'static str {
    if node.kind() == "do_statement" {
        "do { ... } while (++count < numiter);` or `do { ...; count++; } while (count < numiter);"
    } else {
        "while (step < steps) { ...; step++; }"
    }
}

/// The condition's first line, for diagnostics.
fn condition_span(cond: Node, source: &str) -> Span {
    crate::front::time_loop::loops::first_line(cond, source)
}

/// Read a `while` or `do` time loop (`node`): its counter, trip count and the
/// statement that advances the counter.
pub fn time_loop(node: Node, source: &str) -> DiagResult<TimeLoop> {
    let is_do = node.kind() == "do_statement";
    let cond = node
        .child_by_field_name("condition")
        .expect("a parsed while or do statement has a condition");
    let body = node
        .child_by_field_name("body")
        .expect("a parsed while or do statement has a body");
    let bad = |label: &str, help: String| {
        vec![Diagnostic::new(
            condition_span(cond, source),
            format!(
                "the time loop's condition does not have the form `{}`",
                form(node)
            ),
            label.to_string(),
            help,
        )]
    };
    let mut e = cond;
    while e.kind() == "parenthesized_expression" {
        match e.named_child(0) {
            Some(inner) => e = inner,
            None => break,
        }
    }
    reads_nothing(e, source)?;
    let op = e
        .child_by_field_name("operator")
        .map_or("", |o| text(o, source));
    let (Some(left), Some(right)) = (
        e.child_by_field_name("left"),
        e.child_by_field_name("right"),
    ) else {
        return Err(bad(
            "not a comparison of the counter with the step count",
            format!(
                "write the loop as `{}`, with the step count known before the loop",
                form(node)
            ),
        ));
    };
    // `step < steps` or `steps > step`, `<=` / `>=` for an inclusive bound.
    let (counter, end, inclusive) = match op {
        "<" | "<=" => (left, right, op == "<="),
        ">" | ">=" => (right, left, op == ">="),
        _ => {
            return Err(bad(
                "not `<` or `<=`",
                format!("count up to the step count: `{}`", form(node)),
            ));
        }
    };
    // The counter, and whether the condition advances it (`++count < numiter`).
    let (var, in_condition) = match counter.kind() {
        "identifier" => (text(counter, source).to_string(), false),
        "update_expression" => {
            let arg = counter.child_by_field_name("argument");
            let written = text(counter, source).trim();
            let pre = written.starts_with("++");
            let up = pre || written.ends_with("++");
            match arg.filter(|a| a.kind() == "identifier" && up) {
                Some(a) if pre && is_do => (text(a, source).to_string(), true),
                Some(a) => {
                    let v = text(a, source);
                    let what = if is_do {
                        format!(
                            "`{}` compares the counter's old value; write `++{v}` there (the body \
                             then sees {v} = its first value, the first value + 1, ...)",
                            text(counter, source)
                        )
                    } else {
                        format!(
                            "advance the counter at the end of the body instead: `while ({v} < ...) \
                             {{ ...; {v}++; }}`"
                        )
                    };
                    return Err(bad("the condition advances the counter", what));
                }
                None => {
                    return Err(bad(
                        "not a variable counted up by one",
                        format!("write the loop as `{}`", form(node)),
                    ));
                }
            }
        }
        _ => {
            return Err(bad(
                "the counter is not a plain variable",
                format!(
                    "count the steps in a variable of their own: `{}`",
                    form(node)
                ),
            ));
        }
    };
    check_bound(end, body, source)?;
    let advance = find_advance(&var, body, source, in_condition, node)?;
    Ok(TimeLoop {
        form: if is_do {
            TimeForm::DoWhile
        } else {
            TimeForm::While
        },
        var: var.clone(),
        declared_type: None,
        start: var,
        end: text(end, source).to_string(),
        inclusive,
        var_type: "long".into(),
        steps_hint: None,
        advance,
    })
}

/// The condition is evaluated once, before the loop: it reads no array, calls
/// nothing and changes nothing but the counter (`++count < numiter`).
fn reads_nothing(cond: Node, source: &str) -> DiagResult<()> {
    let unknown = descendants(cond).into_iter().find(|n| {
        matches!(
            n.kind(),
            "subscript_expression"
                | "call_expression"
                | "pointer_expression"
                | "assignment_expression"
        ) && !(n.kind() == "pointer_expression"
            && n.child_by_field_name("operator")
                .is_some_and(|o| text(o, source) == "&"))
    });
    if let Some(n) = unknown {
        let what = match n.kind() {
            "subscript_expression" | "pointer_expression" => "reads memory",
            "call_expression" => "calls a function",
            _ => "assigns a variable",
        };
        return Err(vec![Diagnostic::new(
            span(n),
            format!(
                "the time loop's condition `{}` {what}",
                text(cond, source).trim()
            ),
            "the step count must be known when the loop starts",
            "tpace runs k steps of a chunk at a time, so the number of steps is fixed before the \
             loop (tpace paper §3.2): count the steps (`while (step < steps)`, with `steps` \
             computed before the loop, or copied there from what the condition reads), and test \
             anything else after the loop",
        )]);
    }
    Ok(())
}

/// The body does not change what the bound reads.
fn check_bound(end: Node, body: Node, source: &str) -> DiagResult<()> {
    let names: Vec<&str> = descendants(end)
        .into_iter()
        .filter(|n| n.kind() == "identifier")
        .map(|n| text(n, source))
        .collect();
    for n in descendants(body) {
        let Some(target) = write_target(n) else {
            continue;
        };
        let t = text(target, source);
        if let Some(name) = names.iter().find(|v| mentions(t, v)) {
            return Err(vec![Diagnostic::new(
                crate::front::time_loop::loops::first_line(n, source),
                format!("the time loop's body changes `{name}`, which its bound reads"),
                "the step count changes in the loop",
                "tpace runs k steps of a chunk at a time, so the number of steps must be fixed \
                 when the loop starts (tpace paper §3.2): leave the bound alone in the loop, or \
                 compute the number of steps before it",
            )]);
        }
    }
    Ok(())
}

/// What a node writes: the left side of an assignment, the operand of `++`/`--`,
/// a declared name, a variable whose address is taken.
fn write_target(n: Node) -> Option<Node> {
    match n.kind() {
        "assignment_expression" => n.child_by_field_name("left"),
        "update_expression" => n.child_by_field_name("argument"),
        "init_declarator" => n.child_by_field_name("declarator"),
        "pointer_expression" => n
            .child_by_field_name("operator")
            .filter(|o| o.kind() == "&")
            .and(n.child_by_field_name("argument")),
        _ => None,
    }
}

/// The statement of the body that advances the counter (`None` when the
/// condition does), or why the body advances it otherwise.
fn find_advance(
    var: &str,
    body: Node,
    source: &str,
    in_condition: bool,
    node: Node,
) -> DiagResult<Option<Span>> {
    let forms = advances(var);
    let is_advance = |item: Node| {
        item.kind() == "expression_statement"
            && item.named_child(0).is_some_and(|e| {
                let compact: String = text(e, source).split_whitespace().collect();
                forms.contains(&compact)
            })
    };
    let top: Vec<Node> = body_items(body)
        .into_iter()
        .filter(|i| is_advance(*i))
        .collect();
    let writes: Vec<Node> = descendants(body)
        .into_iter()
        .filter(|n| {
            write_target(*n).is_some_and(|t| t.kind() == "identifier" && text(t, source) == var)
        })
        .collect();
    let stray = writes
        .iter()
        .find(|w| !top.iter().any(|t| t.byte_range().contains(&w.start_byte())));
    let help = if in_condition {
        format!("the condition `++{var} < ...` advances the counter; leave it alone in the body")
    } else {
        format!(
            "advance the counter once a step, with a statement of its own in the loop's body \
             (`{var}++;`), and change it nowhere else"
        )
    };
    if let Some(w) = stray {
        return Err(vec![Diagnostic::new(
            crate::front::time_loop::loops::first_line(*w, source),
            format!("the time loop's counter `{var}` is changed here"),
            "not the loop's one advance a step",
            help,
        )]);
    }
    match (top.as_slice(), in_condition) {
        ([], true) => Ok(None),
        ([one], false) => Ok(Some(span(*one))),
        ([], false) => Err(vec![Diagnostic::new(
            crate::front::time_loop::loops::first_line(node, source),
            format!("the time loop never advances its counter `{var}`"),
            "no `++` of the counter in the body",
            format!(
                "tpace needs a counter advanced once a step: `{}`",
                form(node)
            ),
        )]),
        ([_, again, ..], _) | ([again, ..], true) => Err(vec![Diagnostic::new(
            span(*again),
            format!("the time loop advances its counter `{var}` twice a step"),
            "advanced again",
            help,
        )]),
    }
}

/// Sweeps see the counter's value at the start of their step: refuse a sweep
/// after the advance that reads it (it would see the next step's value).
pub fn check_reads_after_advance(time: &TimeLoop, body: &[Sweep], source: &str) -> DiagResult<()> {
    let Some(advance) = &time.advance else {
        return Ok(());
    };
    // A sweep of a called function stands where the call does, and reads what the
    // call passes (its own names are no counter: the function may not use it).
    let place = |s: &Sweep| s.call.as_ref().map_or(s.span.clone(), |c| c.span.clone());
    let errors: Vec<Diagnostic> = body
        .iter()
        .filter(|s| {
            let at = place(s);
            at.start > advance.start && mentions(&source[at], &time.var)
        })
        .map(|s| {
            let var = &time.var;
            Diagnostic::new(
                match &s.call {
                    Some(c) => c.span.clone(),
                    None => s
                        .loops
                        .iter()
                        .find(|l| !l.fixed)
                        .map_or(s.span.clone(), |l| l.header.clone()),
                },
                format!("this sweep reads the time loop's counter `{var}` after the loop advances it"),
                format!(
                    "`{}` stands before it",
                    source[advance.clone()].trim()
                ),
                format!(
                    "tpace gives every sweep of a step the counter's value at the step's start; \
                     advance `{var}` after the last sweep that reads it, writing `{var} + 1` where a \
                     sweep means the advanced value"
                ),
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
