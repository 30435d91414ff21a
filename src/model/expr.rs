//! Evaluating the C expressions of `size` extents and the time loop bound
//! with macro values: those given on the command line (`--set X=48000`)
//! first, then the program's macros as the C preprocessor listed them (its
//! headers' and `-D` options' too, function-like ones included), or the
//! file's own object-like `#define NAME value` lines.

use crate::front::macros::MacroTable;
use crate::ir::Program;
use std::collections::BTreeMap;

/// Macro values for evaluating C expressions.
#[derive(Debug, Clone, Default)]
pub struct Macros {
    /// `--set NAME=VALUE` pairs, which win over the file's definitions.
    set: BTreeMap<String, String>,
    /// The source's object-like `#define NAME body` lines (the first of each name).
    defined: BTreeMap<String, String>,
    /// The program's macros with the `--set` values over them: expressions are
    /// expanded with these first.
    table: Option<MacroTable>,
}

impl Macros {
    /// Macros from `NAME=VALUE` strings and the program's macro table (as the
    /// front end read it); its source's lines where the table is empty.
    pub fn for_program(set: &[String], program: &Program) -> Result<Macros, String> {
        let mut m = Macros::new(set, &program.source)?;
        if !program.macros.is_empty() {
            let mut table = MacroTable::default();
            for d in &program.macros {
                let params = d.params.as_ref().map(|p| format!("({})", p.join(", ")));
                let params = params
                    .map(|p| p.replace("__VA_ARGS__", "..."))
                    .unwrap_or_default();
                table.define_line(&format!("{}{params} {}", d.name, d.body));
            }
            for (name, value) in m.set.iter().filter(|(n, _)| is_identifier(n)) {
                table.define_line(&format!("{name} {value}"));
            }
            m.table = Some(table);
        }
        Ok(m)
    }

    /// Macros from `NAME=VALUE` strings and the program's source text.
    pub fn new(set: &[String], source: &str) -> Result<Macros, String> {
        let mut m = Macros::default();
        for item in set {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| format!("--set {item}: expected NAME=VALUE"))?;
            // A member of a struct (`p->mrows`, a run-time extent) may be given too.
            let Some(name) = crate::front::directives::array_name(name) else {
                return Err(format!(
                    "--set {item}: `{}` is not a C identifier or member expression",
                    name.trim()
                ));
            };
            m.set.insert(name, value.trim().to_string());
        }
        for line in source.lines() {
            let Some(rest) = line.trim_start().strip_prefix('#') else {
                continue;
            };
            let Some(rest) = rest.trim_start().strip_prefix("define") else {
                continue;
            };
            if !rest.starts_with([' ', '\t']) {
                continue;
            }
            let rest = rest.trim_start();
            let name_len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (name, body) = rest.split_at(name_len);
            // Function-like macros (`#define F(x) ...`) are not values.
            if name.is_empty() || body.starts_with('(') {
                continue;
            }
            let body = body.split("//").next().unwrap_or("").trim();
            m.defined
                .entry(name.to_string())
                .or_insert_with(|| body.to_string());
        }
        Ok(m)
    }

    /// Evaluate a C integer expression.
    pub fn eval(&self, expr: &str) -> Result<i128, String> {
        match &self.table {
            Some(table) => {
                let expanded = table
                    .expand(expr)
                    .ok_or_else(|| format!("the macros in `{expr}` nest too deeply"))?;
                self.eval_depth(&expanded, 0)
            }
            None => self.eval_depth(expr, 0),
        }
    }

    fn eval_depth(&self, expr: &str, depth: usize) -> Result<i128, String> {
        if depth > 32 {
            return Err("macro definitions nest too deeply (a cycle?)".into());
        }
        let tokens = tokenize(expr)?;
        let mut p = Parser {
            tokens,
            pos: 0,
            macros: self,
            depth,
        };
        let v = p.expr()?;
        if p.pos != p.tokens.len() {
            return Err(format!("unexpected `{}`", p.tokens[p.pos].text()));
        }
        Ok(v)
    }

    fn lookup(&self, name: &str, depth: usize) -> Result<i128, String> {
        let body = self.set.get(name).or_else(|| self.defined.get(name));
        match body {
            Some(body) => self
                .eval_depth(body, depth + 1)
                .map_err(|e| format!("macro `{name}` = `{body}`: {e}")),
            None => Err(format!(
                "`{name}` is not a macro with a value; give --set {name}=VALUE"
            )),
        }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(i128),
    Ident(String),
    Op(char),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Num(n) => n.to_string(),
            Token::Ident(s) => s.clone(),
            Token::Op(c) => c.to_string(),
        }
    }
}

fn tokenize(s: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
            let value = if let Some(hex) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                i128::from_str_radix(hex, 16)
            } else {
                digits.parse::<i128>()
            };
            out.push(Token::Num(
                value.map_err(|_| format!("`{text}` is not an integer constant"))?,
            ));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            // `p->mrows`, `s.n`: one name, as `--set` gives it.
            loop {
                let mut j = i;
                while j < chars.len() && chars[j] == ' ' {
                    j += 1;
                }
                let op = if chars.get(j) == Some(&'.') {
                    1
                } else if chars.get(j) == Some(&'-') && chars.get(j + 1) == Some(&'>') {
                    2
                } else {
                    break;
                };
                let mut k = j + op;
                while k < chars.len() && chars[k] == ' ' {
                    k += 1;
                }
                if !chars
                    .get(k)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
                {
                    break;
                }
                while k < chars.len() && (chars[k].is_ascii_alphanumeric() || chars[k] == '_') {
                    k += 1;
                }
                i = k;
            }
            let name: String = chars[start..i].iter().filter(|c| **c != ' ').collect();
            out.push(Token::Ident(name));
        } else if "+-*/%()".contains(c) {
            out.push(Token::Op(c));
            i += 1;
        } else {
            return Err(format!("`{c}` is not supported in an extent expression"));
        }
    }
    Ok(out)
}

/// Type names a cast may use: `(long)(n)`.
const CAST_WORDS: [&str; 8] = [
    "int",
    "long",
    "short",
    "char",
    "unsigned",
    "signed",
    "size_t",
    "ptrdiff_t",
];

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    macros: &'a Macros,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn expr(&mut self) -> Result<i128, String> {
        let mut v = self.term()?;
        while let Some(Token::Op(op @ ('+' | '-'))) = self.peek().cloned() {
            self.pos += 1;
            let r = self.term()?;
            v = if op == '+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or("overflow")?;
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<i128, String> {
        let mut v = self.unary()?;
        while let Some(Token::Op(op @ ('*' | '/' | '%'))) = self.peek().cloned() {
            self.pos += 1;
            let r = self.unary()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or("overflow")?,
                _ if r == 0 => return Err("division by zero".into()),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<i128, String> {
        match self.peek().cloned() {
            Some(Token::Op('-')) => {
                self.pos += 1;
                Ok(-self.unary()?)
            }
            Some(Token::Op('+')) => {
                self.pos += 1;
                self.unary()
            }
            Some(Token::Op('(')) if self.is_cast() => {
                while self.peek() != Some(&Token::Op(')')) {
                    self.pos += 1;
                }
                self.pos += 1;
                self.unary()
            }
            _ => self.primary(),
        }
    }

    /// `(` followed by type words only and `)`.
    fn is_cast(&self) -> bool {
        let mut i = self.pos + 1;
        let mut words = 0;
        while let Some(Token::Ident(w)) = self.tokens.get(i) {
            if !CAST_WORDS.contains(&w.as_str()) {
                return false;
            }
            words += 1;
            i += 1;
        }
        words > 0 && self.tokens.get(i) == Some(&Token::Op(')'))
    }

    fn primary(&mut self) -> Result<i128, String> {
        let tok = self.peek().cloned().ok_or("expression ends early")?;
        self.pos += 1;
        match tok {
            Token::Num(n) => Ok(n),
            Token::Ident(name) => self.macros.lookup(&name, self.depth),
            Token::Op('(') => {
                let v = self.expr()?;
                if self.peek() != Some(&Token::Op(')')) {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Token::Op(c) => Err(format!("unexpected `{c}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(set: &[&str], src: &str) -> Macros {
        let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        Macros::new(&set, src).unwrap()
    }

    #[test]
    fn arithmetic_casts_and_precedence() {
        let m = m(&[], "");
        assert_eq!(m.eval("1 + 2 * 3").unwrap(), 7);
        assert_eq!(m.eval("(1 + 2) * 3").unwrap(), 9);
        assert_eq!(m.eval("(long)((10) - (3))").unwrap(), 7);
        assert_eq!(m.eval("-4 + 17 % 5 - 9 / 2").unwrap(), -6);
        assert_eq!(m.eval("0x10 + 2UL").unwrap(), 18);
        assert!(m.eval("1 / 0").unwrap_err().contains("division"));
    }

    #[test]
    fn set_wins_over_the_files_defines() {
        let src = "#ifndef X\n#define X 1000\n#endif\n# define Y (X + 2) // wide\n#define F(a) a\n";
        let plain = m(&[], src);
        assert_eq!(plain.eval("X").unwrap(), 1000);
        assert_eq!(plain.eval("Y * 2").unwrap(), 2004);
        let set = m(&["X=48000"], src);
        assert_eq!(set.eval("Y").unwrap(), 48002);
    }

    #[test]
    fn missing_macro_is_named() {
        let e = m(&[], "").eval("NX - 2").unwrap_err();
        assert!(e.contains("`NX`") && e.contains("--set NX="), "{e}");
        let e = m(&[], "#define A B\n").eval("A").unwrap_err();
        assert!(e.contains("`B`"), "{e}");
    }

    #[test]
    fn the_programs_table_is_used_with_set_on_top() {
        // A program as the front end reads it, with the table a preprocessor
        // would have listed (the header's N and a function-like bound).
        let src = "float a[8];\nvoid f(int s)\n{\n    int t, x;\n\
                   #pragma tpace pipeline targetinout(a) size([0:8]) halo([0:0])\n\
                   for (t = 0; t < s; t++)\n\
                   #pragma tpace loop dim(1)\n\
                   for (x = 0; x < 8; x++)\n            a[x] = a[x] + 1.0f;\n}\n";
        let mut program = crate::front::parse("t.c", src).expect("a valid program");
        program.macros = vec![
            crate::ir::Macro {
                name: "N".into(),
                params: None,
                body: "40".into(),
            },
            crate::ir::Macro {
                name: "BOUND".into(),
                params: Some(vec!["x".into(), "y".into()]),
                body: "(x)".into(),
            },
        ];
        let m = Macros::for_program(&[], &program).unwrap();
        assert_eq!(m.eval("BOUND(N, n) - 2").unwrap(), 38);
        let set = Macros::for_program(&["N=100".into()], &program).unwrap();
        assert_eq!(set.eval("BOUND(N, n)").unwrap(), 100);
        assert!(m.eval("n").unwrap_err().contains("--set n="));
    }

    #[test]
    fn struct_members_are_values_set_on_the_command_line() {
        let m = m(&["p->mrows=17", "s . n=4"], "");
        assert_eq!(m.eval("p -> mrows * s.n - 1").unwrap(), 67);
        let e = m.eval("p->mcols").unwrap_err();
        assert!(e.contains("--set p->mcols="), "{e}");
    }

    #[test]
    fn bad_set_is_refused() {
        assert!(Macros::new(&["X".into()], "").is_err());
        assert!(Macros::new(&["1X=3".into()], "").is_err());
    }

    #[test]
    fn cycles_stop() {
        let e = m(&[], "#define A B\n#define B A\n").eval("A").unwrap_err();
        assert!(e.contains("deeply"), "{e}");
    }
}
