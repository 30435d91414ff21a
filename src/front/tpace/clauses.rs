//! Parser for the text of one `#pragma tpace ...` line.
//!
//! Grammar (the tpace paper, §3.3):
//!
//! ```text
//! init
//! pipeline targetinout(a, b) targetin(c) size([lo:n][lo:n]) halo([m:p][m:p]) async
//! loop dim(d)
//! ```

use crate::diag::Diagnostic;
use crate::front::directives::{Cursor, Directive, Named, PipelineClauses};

/// Parse the text after `#pragma` (which starts with `tpace`), located at byte `base` of the file.
pub fn parse_directive(text: &str, base: usize) -> Result<Directive, Diagnostic> {
    let mut p = Cursor { text, pos: 0, base };
    p.skip_ws();
    let word = p.ident().ok_or_else(|| p.error("expected `tpace`"))?;
    debug_assert_eq!(word.name, "tpace");
    p.skip_ws();
    let kind = p.ident().ok_or_else(|| {
        p.error_help(
            "`#pragma tpace` needs a directive",
            "write `init`, `pipeline ...` or `loop dim(d)`",
        )
    })?;
    match kind.name.as_str() {
        "init" => {
            p.expect_end()?;
            Ok(Directive::Init)
        }
        "pipeline" => parse_pipeline(&mut p).map(|c| Directive::Pipeline(Box::new(c))),
        "loop" => parse_loop(&mut p),
        other => Err(Diagnostic::new(
            kind.span,
            format!("unknown tpace directive `{other}`"),
            "not a tpace directive",
            "tpace directives are `init`, `pipeline` and `loop`",
        )),
    }
}

fn parse_loop(p: &mut Cursor) -> Result<Directive, Diagnostic> {
    p.skip_ws();
    let start = p.abs();
    let clause = p.ident().ok_or_else(|| {
        p.error_help(
            "`loop` needs a `dim(d)` clause",
            "write `#pragma tpace loop dim(1)` on the innermost loop, `dim(2)` on the next, ...",
        )
    })?;
    if clause.name != "dim" {
        return Err(unknown_clause(&clause, "`loop` takes only `dim(d)`"));
    }
    let inner = p.parenthesised()?;
    let dim = inner.0.trim().parse::<usize>().ok().filter(|d| *d >= 1);
    let span = start..p.abs();
    let dim = dim.ok_or_else(|| {
        Diagnostic::new(
            span.clone(),
            format!("`dim({})` is not a dimension number", inner.0.trim()),
            "expected a positive integer",
            "`dim(1)` marks the innermost (fastest-varying) index, `dim(2)` the next one out",
        )
    })?;
    p.expect_end()?;
    Ok(Directive::Loop { dim, span })
}

fn parse_pipeline(p: &mut Cursor) -> Result<PipelineClauses, Diagnostic> {
    let mut c = PipelineClauses::default();
    loop {
        p.skip_ws();
        if p.at_end() {
            return Ok(c);
        }
        let start = p.abs();
        let clause = p.ident().ok_or_else(|| {
            p.error_help(
                "expected a clause name",
                "`pipeline` takes targetinout(...), targetin(...), size(...), halo(...) and async",
            )
        })?;
        match clause.name.as_str() {
            "targetinout" => c.targetinout.extend(p.name_list()?),
            "targetin" => c.targetin.extend(p.name_list()?),
            "size" => {
                let pairs = p.pair_list()?;
                c.size = Some((pairs, start..p.abs()));
            }
            "halo" => {
                let pairs = p.pair_list()?;
                c.halo = Some((pairs, start..p.abs()));
            }
            "async" => {
                // An optional queue argument, as in OpenACC, is accepted and ignored:
                // tpace chooses the queues itself.
                p.skip_ws();
                if p.peek() == Some('(') {
                    p.parenthesised()?;
                }
                c.asynchronous = true;
            }
            _ => {
                return Err(unknown_clause(
                    &clause,
                    "`pipeline` takes targetinout(...), targetin(...), size(...), halo(...) and async",
                ));
            }
        }
    }
}

fn unknown_clause(clause: &Named, help: &str) -> Diagnostic {
    Diagnostic::new(
        clause.span.clone(),
        format!("unknown clause `{}`", clause.name),
        "not understood here",
        help,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_papers_pipeline() {
        let text = "tpace pipeline targetinout(work,a) size([0:X][0:Y]) halo([1:1][1:1]) async";
        let Directive::Pipeline(c) = parse_directive(text, 100).unwrap() else {
            panic!("not a pipeline")
        };
        let names: Vec<_> = c.targetinout.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["work", "a"]);
        assert_eq!(&text[c.targetinout[1].span.start - 100..][..1], "a");
        let (size, _) = c.size.unwrap();
        assert_eq!(
            (size[0].first.as_str(), size[0].second.as_str()),
            ("0", "X")
        );
        assert_eq!(c.halo.unwrap().0.len(), 2);
        assert!(c.asynchronous);
    }

    #[test]
    fn comments_on_a_pragma_line_are_whitespace() {
        assert!(matches!(
            parse_directive("tpace init /* the runtime */", 0),
            Ok(Directive::Init)
        ));
        let text = "tpace pipeline /* arrays */ targetinout(a, b) size([0:N]) halo([1:1]) async // overlap";
        let Directive::Pipeline(c) = parse_directive(text, 0).unwrap() else {
            panic!("not a pipeline")
        };
        assert!(c.asynchronous);
        assert_eq!(c.targetinout.len(), 2);
        let d = parse_directive("tpace loop /* outer */ dim(2) // rows", 0).unwrap();
        assert!(matches!(d, Directive::Loop { dim: 2, .. }));
        // Text after a comment is still read, and still refused when it is not a clause.
        let e = parse_directive("tpace init /* c */ extra", 0).unwrap_err();
        assert_eq!(e.message, "unexpected text after the directive");
    }

    #[test]
    fn parses_loop_dim() {
        let d = parse_directive("tpace loop dim(2)", 0).unwrap();
        assert!(matches!(d, Directive::Loop { dim: 2, .. }));
    }

    #[test]
    fn rejects_unknown_clause_at_its_position() {
        let e = parse_directive("tpace pipeline targetinout(a) sizes([0:X])", 10).unwrap_err();
        assert_eq!(e.message, "unknown clause `sizes`");
        assert_eq!(e.span, 40..45);
    }

    #[test]
    fn member_expressions_are_array_names() {
        let text =
            "tpace pipeline targetinout(p->m, wrk2 -> m) targetin(s.u, a) size([0:N]) halo([1:1])";
        let Directive::Pipeline(c) = parse_directive(text, 0).unwrap() else {
            panic!("not a pipeline")
        };
        let names: Vec<_> = c
            .targetinout
            .iter()
            .chain(&c.targetin)
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["p->m", "wrk2->m", "s.u", "a"]);
        assert_eq!(&text[c.targetinout[1].span.clone()], "wrk2 -> m");
    }

    #[test]
    fn rejects_dim_zero_and_garbage() {
        assert!(parse_directive("tpace loop dim(0)", 0).is_err());
        assert!(parse_directive("tpace loop dim(x)", 0).is_err());
        assert!(parse_directive("tpace pipeline size([0X])", 0).is_err());
        assert!(parse_directive("tpace pipeline targetin(a b)", 0).is_err());
        assert!(parse_directive("tpace pipeline targetin(a", 0).is_err());
    }
}
