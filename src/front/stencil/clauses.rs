//! Parser for the text of one `#pragma stencil ...` line.
//!
//! Grammar (the stencil-directives paper, Table 2 and Fig. 5):
//!
//! ```text
//! begin
//! step(t:MAX)
//! data source(float A[NZ][NY][NX], ...) destination(float B[NZ][NY][NX], ...)
//! dimension(i, j, k)
//! calc
//! copy
//! end
//! ```

use crate::diag::Diagnostic;
use crate::front::directives::{Cursor, Named, array_name};
use crate::ir::Span;

/// One array of a `data` clause: `float A[NZ][NY][NX]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataArray {
    /// The element type as written (`float`, `double`, a typedef name).
    pub elem: String,
    /// The array's name, with its position.
    pub name: Named,
    /// Each bracket's extent, outermost first, as C text.
    pub extents: Vec<String>,
    /// Where the whole declaration is written.
    pub span: Span,
}

/// A parsed stencil directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StencilDirective {
    /// `begin`: the stencil region starts.
    Begin,
    /// `end`: the stencil region ends.
    End,
    /// `step(t:MAX)`: the time loop's counter and the most steps it runs.
    Step {
        /// The counter.
        var: Named,
        /// Its maximum, as C text.
        max: String,
    },
    /// `data source(...) destination(...)`.
    Data {
        /// The arrays read (and, through the copy, written back).
        source: Vec<DataArray>,
        /// The arrays the calc nest writes.
        destination: Vec<DataArray>,
    },
    /// `dimension(i, j, k)`: the loop variable of each axis, outermost first.
    Dimension(Vec<Named>),
    /// `calc`: the loop nest that computes the stencil.
    Calc,
    /// `copy`: the loop nest that copies the destination back to the source.
    Copy,
}

const DIRECTIVES: &str =
    "begin, step(t:MAX), data source(...) destination(...), dimension(i, ...), calc, copy and end";

/// Parse the text after `#pragma` (which starts with `stencil`), located at byte `base` of the file.
pub fn parse_directive(text: &str, base: usize) -> Result<StencilDirective, Diagnostic> {
    let mut p = Cursor { text, pos: 0, base };
    p.skip_ws();
    let word = p.ident().ok_or_else(|| p.error("expected `stencil`"))?;
    debug_assert_eq!(word.name, "stencil");
    p.skip_ws();
    let kind = p.ident().ok_or_else(|| {
        p.error_help(
            "`#pragma stencil` needs a directive",
            &format!("the stencil directives are {DIRECTIVES}"),
        )
    })?;
    let directive = match kind.name.as_str() {
        "begin" => StencilDirective::Begin,
        "end" => StencilDirective::End,
        "calc" => StencilDirective::Calc,
        "copy" => StencilDirective::Copy,
        "step" => parse_step(&mut p)?,
        "data" => parse_data(&mut p)?,
        "dimension" => parse_dimension(&mut p)?,
        other => {
            return Err(Diagnostic::new(
                kind.span,
                format!("unknown stencil directive `{other}`"),
                "not a stencil directive",
                format!("the stencil directives are {DIRECTIVES}"),
            ));
        }
    };
    p.expect_end()?;
    Ok(directive)
}

fn parse_step(p: &mut Cursor) -> Result<StencilDirective, Diagnostic> {
    let (inner, start) = p.parenthesised()?;
    let form =
        "write step(t:MAX): the time loop's counter and the most steps it runs, e.g. step(t:1000)";
    let Some(colon) = inner.find(':') else {
        return Err(Diagnostic::new(
            start..start + inner.len().max(1),
            "`step` needs the time variable and its maximum",
            "no `:` here",
            form,
        ));
    };
    let var_text = &inner[..colon];
    let lead = var_text.len() - var_text.trim_start().len();
    let var = var_text.trim();
    let max = inner[colon + 1..].trim();
    let is_ident = !var.is_empty()
        && var.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !var.starts_with(|c: char| c.is_ascii_digit());
    if !is_ident || max.is_empty() {
        return Err(Diagnostic::new(
            start..start + inner.len().max(1),
            "`step` needs the time variable and its maximum",
            "expected `t:MAX`",
            form,
        ));
    }
    Ok(StencilDirective::Step {
        var: Named {
            name: var.to_string(),
            span: start + lead..start + lead + var.len(),
        },
        max: max.to_string(),
    })
}

fn parse_data(p: &mut Cursor) -> Result<StencilDirective, Diagnostic> {
    let mut source = None;
    let mut destination = None;
    loop {
        p.skip_ws();
        if p.at_end() {
            break;
        }
        let clause = p.ident().ok_or_else(|| {
            p.error_help(
                "expected `source(...)` or `destination(...)`",
                "write data source(float A[N][M]) destination(float B[N][M])",
            )
        })?;
        let slot = match clause.name.as_str() {
            "source" => &mut source,
            "destination" => &mut destination,
            other => {
                return Err(Diagnostic::new(
                    clause.span,
                    format!("unknown clause `{other}` of `data`"),
                    "not understood here",
                    "`data` takes source(...) and destination(...), each a list of declarations \
                     such as `float A[NY][NX]`",
                ));
            }
        };
        if slot.is_some() {
            return Err(Diagnostic::new(
                clause.span.clone(),
                format!("`{}` is given twice", clause.name),
                "second one",
                "list every array of the role in one clause, separated by commas",
            ));
        }
        let (inner, start) = p.parenthesised()?;
        *slot = Some(declarations(&inner, start)?);
    }
    let whole = p.base..p.base + p.text.len();
    match (source, destination) {
        (Some(source), Some(destination)) => Ok(StencilDirective::Data {
            source,
            destination,
        }),
        (None, _) => Err(Diagnostic::new(
            whole,
            "`data` needs a `source(...)` clause",
            "no source",
            "name the arrays the stencil reads: data source(float A[N][M]) destination(float B[N][M])",
        )),
        (_, None) => Err(Diagnostic::new(
            whole,
            "`data` needs a `destination(...)` clause",
            "no destination",
            "name the arrays the calc nest writes: data source(float A[N][M]) destination(float B[N][M])",
        )),
    }
}

/// `float A[NZ][NY][NX], double c[N]`: comma-separated declarations (commas
/// inside brackets or parentheses belong to the extents).
fn declarations(inner: &str, start: usize) -> Result<Vec<DataArray>, Diagnostic> {
    let mut out = Vec::new();
    for (at, part) in split_top_level(inner) {
        out.push(declaration(part, start + at)?);
    }
    Ok(out)
}

fn split_top_level(text: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push((from, &text[from..i]));
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push((from, &text[from..]));
    parts
}

fn declaration(part: &str, at: usize) -> Result<DataArray, Diagnostic> {
    let lead = part.len() - part.trim_start().len();
    let text = part.trim();
    let span = at + lead..at + lead + text.len().max(1);
    let bad = |what: &str| {
        Diagnostic::new(
            span.clone(),
            format!("`{text}` is not an array declaration: {what}"),
            "expected `TYPE NAME[extent]...`",
            "declare each array with its element type and its extents, outermost first, \
             e.g. source(float A[NZ][NY][NX])",
        )
    };
    let Some(open) = text.find('[') else {
        return Err(bad("it has no extents"));
    };
    let head = text[..open].trim_end();
    let name_at = head
        .rfind(|c: char| c.is_whitespace() || c == '*')
        .map_or(0, |i| i + 1);
    let (elem, name) = (head[..name_at].trim(), &head[name_at..]);
    if elem.is_empty() {
        return Err(bad("it has no element type"));
    }
    if elem.contains('*') {
        return Err(bad(
            "a pointer's element type is what the array holds, without `*`",
        ));
    }
    let Some(normal) = array_name(name) else {
        return Err(bad("it has no array name"));
    };
    let mut extents = Vec::new();
    let mut rest = &text[open..];
    while !rest.is_empty() {
        let Some(close) = rest.find(']').filter(|_| rest.starts_with('[')) else {
            return Err(bad("its extents are not `[...]` pairs"));
        };
        let extent = rest[1..close].trim();
        if extent.is_empty() {
            return Err(bad("an extent is empty"));
        }
        extents.push(extent.to_string());
        rest = rest[close + 1..].trim_start();
    }
    let name_start = at + lead + name_at;
    Ok(DataArray {
        elem: elem.split_whitespace().collect::<Vec<_>>().join(" "),
        name: Named {
            name: normal,
            span: name_start..name_start + name.len(),
        },
        extents,
        span,
    })
}

fn parse_dimension(p: &mut Cursor) -> Result<StencilDirective, Diagnostic> {
    let (inner, start) = p.parenthesised()?;
    let mut vars = Vec::new();
    for (at, part) in split_top_level(&inner) {
        let lead = part.len() - part.trim_start().len();
        let name = part.trim();
        let begin = start + at + lead;
        let ok = !name.is_empty()
            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(Diagnostic::new(
                begin..begin + name.len().max(1),
                format!("`{name}` is not a loop variable"),
                "expected an identifier",
                "list the loop variable of each axis, outermost first, e.g. dimension(i, j, k)",
            ));
        }
        if let Some(first) = vars.iter().find(|v: &&Named| v.name == name) {
            return Err(Diagnostic::new(
                begin..begin + name.len(),
                format!("`{name}` is listed twice"),
                "again",
                format!(
                    "each axis has its own loop variable; `{}` is already the axis at column {}",
                    first.name,
                    first.span.start - start + 1
                ),
            ));
        }
        vars.push(Named {
            name: name.to_string(),
            span: begin..begin + name.len(),
        });
    }
    Ok(StencilDirective::Dimension(vars))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_on_a_pragma_line_are_whitespace() {
        let StencilDirective::Step { var, max } =
            parse_directive("stencil step(t:1000) /* time */", 0).unwrap()
        else {
            panic!("not step")
        };
        assert_eq!((var.name.as_str(), max.as_str()), ("t", "1000"));
        assert!(parse_directive("stencil end // of the region", 0).is_ok());
    }

    #[test]
    fn parses_the_papers_fig5() {
        let text = "stencil data source(float A[NZ][NY][NX]) destination(float B[NZ][NY][NX])";
        let StencilDirective::Data {
            source,
            destination,
        } = parse_directive(text, 10).unwrap()
        else {
            panic!("not data")
        };
        assert_eq!(source[0].elem, "float");
        assert_eq!(source[0].name.name, "A");
        assert_eq!(&text[source[0].name.span.start - 10..][..1], "A");
        assert_eq!(source[0].extents, ["NZ", "NY", "NX"]);
        assert_eq!(destination[0].name.name, "B");
        let StencilDirective::Step { var, max } =
            parse_directive("stencil step(t:1000)", 0).unwrap()
        else {
            panic!("not step")
        };
        assert_eq!(
            (var.name.as_str(), max.as_str(), var.span),
            ("t", "1000", 13..14)
        );
        let StencilDirective::Dimension(vars) =
            parse_directive("stencil dimension(i, j, k)", 0).unwrap()
        else {
            panic!("not dimension")
        };
        let names: Vec<_> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["i", "j", "k"]);
        for (text, want) in [
            ("stencil begin", StencilDirective::Begin),
            ("stencil end", StencilDirective::End),
            ("stencil calc", StencilDirective::Calc),
            ("stencil  copy ", StencilDirective::Copy),
        ] {
            assert_eq!(parse_directive(text, 0).unwrap(), want);
        }
    }

    #[test]
    fn several_arrays_and_types() {
        let text = "stencil data destination(double wrk2[I][J][K]) source(unsigned int a[I][J][K], \
                    double p [I] [J] [K], real s.u[N + (M, 1)][K])";
        let StencilDirective::Data { source, .. } = parse_directive(text, 0).unwrap() else {
            panic!("not data")
        };
        let got: Vec<_> = source
            .iter()
            .map(|d| (d.elem.as_str(), d.name.name.as_str(), d.extents.len()))
            .collect();
        assert_eq!(
            got,
            [
                ("unsigned int", "a", 3),
                ("double", "p", 3),
                ("real", "s.u", 2)
            ]
        );
        assert_eq!(source[2].extents[0], "N + (M, 1)");
    }

    #[test]
    fn refuses_what_is_wrong_at_its_position() {
        let e = parse_directive("stencil stpe(t:10)", 100).unwrap_err();
        assert_eq!(e.message, "unknown stencil directive `stpe`");
        assert_eq!(e.span, 108..112);
        for bad in [
            "stencil step(t)",
            "stencil step(1t:5)",
            "stencil step(t:)",
            "stencil data source(float A[N])",
            "stencil data destination(float A[N])",
            "stencil data source(A[N]) destination(float B[N])",
            "stencil data source(float A) destination(float B[N])",
            "stencil data source(float A[N]) destination(float B[N]) source(float C[N])",
            "stencil data source(float A[N]) target(float B[N])",
            "stencil data source(float *A[N]) destination(float B[N])",
            "stencil dimension(i, 2)",
            "stencil dimension(i, i)",
            "stencil begin now",
            "stencil",
        ] {
            assert!(parse_directive(bad, 0).is_err(), "{bad}");
        }
    }
}
