//! Integer polynomials over C identifiers, used to read subscripts such as
//! `a[(x-1)*Y + y + 1]` as "index plus constant offset" per dimension.

use std::collections::BTreeMap;
use tree_sitter::Node;

/// A polynomial with integer coefficients; each monomial is a sorted list of identifiers.
///
/// The arithmetic is checked: an operation whose coefficients overflow `i64`, or whose
/// result grows past [`MAX_TERMS`] monomials or [`MAX_DEGREE`], gives `None`, so that no
/// input can make the front end panic or spend unbounded time on a subscript.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Poly {
    terms: BTreeMap<Vec<String>, i64>,
}

/// Most monomials a polynomial may have (subscripts have a handful).
pub const MAX_TERMS: usize = 64;

/// Highest degree of a monomial (a 3-D flat subscript has degree 3).
pub const MAX_DEGREE: usize = 8;

/// Deepest expression nesting [`Poly::from_node`] reads.
pub const MAX_DEPTH: usize = 64;

impl Poly {
    /// The constant `c`.
    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::default();
        if c != 0 {
            p.terms.insert(Vec::new(), c);
        }
        p
    }

    /// The identifier `name`.
    pub fn var(name: &str) -> Poly {
        let mut p = Poly::default();
        p.terms.insert(vec![name.to_string()], 1);
        p
    }

    /// Add `c * mono`; `None` on overflow or when the result grows too big.
    fn add_term(&mut self, mono: Vec<String>, c: i64) -> Option<()> {
        if mono.len() > MAX_DEGREE {
            return None;
        }
        let e = self.terms.entry(mono).or_insert(0);
        *e = e.checked_add(c)?;
        if *e == 0 {
            self.terms.retain(|_, v| *v != 0);
        }
        (self.terms.len() <= MAX_TERMS).then_some(())
    }

    /// `self + other`
    pub fn add(&self, other: &Poly) -> Option<Poly> {
        let mut r = self.clone();
        for (m, c) in &other.terms {
            r.add_term(m.clone(), *c)?;
        }
        Some(r)
    }

    /// `self * k`
    pub fn scale(&self, k: i64) -> Option<Poly> {
        let mut r = Poly::default();
        for (m, c) in &self.terms {
            r.add_term(m.clone(), c.checked_mul(k)?)?;
        }
        Some(r)
    }

    /// `self - other`
    pub fn sub(&self, other: &Poly) -> Option<Poly> {
        self.add(&other.scale(-1)?)
    }

    /// `self * other`
    pub fn mul(&self, other: &Poly) -> Option<Poly> {
        if self.terms.len().saturating_mul(other.terms.len()) > MAX_TERMS * MAX_TERMS {
            return None;
        }
        let mut r = Poly::default();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                if m1.len() + m2.len() > MAX_DEGREE {
                    return None;
                }
                let mut m: Vec<String> = m1.iter().chain(m2).cloned().collect();
                m.sort();
                r.add_term(m, c1.checked_mul(*c2)?)?;
            }
        }
        Some(r)
    }

    /// The value if the polynomial is a constant.
    pub fn as_constant(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// `self` as `coef * name + rest`, where neither part mentions `name`;
    /// `None` if `name` appears in a product with itself.
    pub fn split(&self, name: &str) -> Option<(Poly, Poly)> {
        let mut coef = Poly::default();
        let mut rest = Poly::default();
        for (m, c) in &self.terms {
            match m.iter().filter(|v| *v == name).count() {
                0 => rest.add_term(m.clone(), *c)?,
                1 => {
                    let other: Vec<String> = m.iter().filter(|v| *v != name).cloned().collect();
                    coef.add_term(other, *c)?
                }
                _ => return None,
            }
        }
        Some((coef, rest))
    }

    /// The polynomial with each name that `values` maps replaced by its
    /// polynomial; `None` on overflow or when the result grows too big.
    pub fn substitute(&self, values: &BTreeMap<String, Poly>) -> Option<Poly> {
        self.map_names(&|name| values.get(name).cloned())
    }

    /// The polynomial with each name for which `value` gives a polynomial
    /// replaced by it; `None` on overflow or when the result grows too big.
    pub fn map_names(&self, value: &dyn Fn(&str) -> Option<Poly>) -> Option<Poly> {
        let mut out = Poly::default();
        for (m, c) in &self.terms {
            let mut term = Poly::constant(*c);
            for name in m {
                let factor = value(name).unwrap_or_else(|| Poly::var(name));
                term = term.mul(&factor)?;
            }
            out = out.add(&term)?;
        }
        Some(out)
    }

    /// The names the polynomial mentions.
    pub fn names(&self) -> std::collections::BTreeSet<&str> {
        self.terms.keys().flatten().map(String::as_str).collect()
    }

    /// The polynomial as a C expression of type `long` (every name cast, so
    /// that products of `int` extents do not overflow).
    pub fn to_c(&self) -> String {
        self.print(true)
    }

    /// The polynomial as plain C text, for messages (`a->mcols * a->mdeps`).
    pub fn to_text(&self) -> String {
        self.print(false)
    }

    fn print(&self, cast: bool) -> String {
        let (pre, suffix) = if cast { ("(long)", "L") } else { ("", "") };
        if self.terms.is_empty() {
            return format!("0{suffix}");
        }
        let mut out = String::new();
        for (m, c) in &self.terms {
            let (sign, mag) = if *c < 0 {
                ("-", c.unsigned_abs())
            } else {
                ("+", c.unsigned_abs())
            };
            if out.is_empty() {
                if sign == "-" {
                    out.push('-');
                }
            } else {
                out.push_str(&format!(" {sign} "));
            }
            let mut factors: Vec<String> = m.iter().map(|v| format!("{pre}{v}")).collect();
            if mag != 1 || factors.is_empty() {
                factors.insert(0, format!("{mag}{suffix}"));
            }
            out.push_str(&factors.join(" * "));
        }
        out
    }

    /// Whether any monomial mentions `name`.
    pub fn mentions(&self, name: &str) -> bool {
        self.terms.keys().any(|m| m.iter().any(|v| v == name))
    }

    /// Read a C expression; `None` if it is not a polynomial in identifiers and integers,
    /// or is nested deeper than [`MAX_DEPTH`], or its arithmetic overflows.
    pub fn from_node(node: Node, src: &str) -> Option<Poly> {
        Poly::from_node_at(node, src, 0)
    }

    fn from_node_at(node: Node, src: &str, depth: usize) -> Option<Poly> {
        if depth > MAX_DEPTH {
            return None;
        }
        let sub = |n: Node| Poly::from_node_at(n, src, depth + 1);
        match node.kind() {
            "number_literal" => crate::front::macros::integer(&src[node.byte_range()])
                .and_then(|v| i64::try_from(v).ok())
                .map(Poly::constant),
            "identifier" => Some(Poly::var(&src[node.byte_range()])),
            // `p->mrows`, `s.n`: a run-time value like a variable, named by its text.
            "field_expression" => member_text(node, src).map(|t| Poly::var(&t)),
            "parenthesized_expression" => sub(node.named_child(0)?),
            "unary_expression" => {
                let arg = sub(node.child_by_field_name("argument")?)?;
                match &src[node.child_by_field_name("operator")?.byte_range()] {
                    "-" => arg.scale(-1),
                    "+" => Some(arg),
                    _ => None,
                }
            }
            "binary_expression" => {
                let l = sub(node.child_by_field_name("left")?)?;
                let r = sub(node.child_by_field_name("right")?)?;
                match &src[node.child_by_field_name("operator")?.byte_range()] {
                    "+" => l.add(&r),
                    "-" => l.sub(&r),
                    "*" => l.mul(&r),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The text of a member expression made of names only (`p->m`, `s.a.b`,
/// `(s).u` as `s.u`), without blanks or parentheses; `None` for anything
/// else (`f().m`, `p[0].m`).
pub fn member_text(node: Node, src: &str) -> Option<String> {
    let mut fields = Vec::new();
    let mut cur = node;
    for _ in 0..MAX_DEPTH {
        match cur.kind() {
            "field_expression" => {
                let op = cur
                    .child_by_field_name("operator")
                    .map_or(".", |o| &src[o.byte_range()]);
                let field = cur.child_by_field_name("field")?;
                fields.push(format!("{op}{}", &src[field.byte_range()]));
                cur = cur.child_by_field_name("argument")?;
            }
            "parenthesized_expression" => cur = cur.named_child(0)?,
            "identifier" => {
                let mut out = src[cur.byte_range()].to_string();
                for f in fields.iter().rev() {
                    out.push_str(f);
                }
                return (!fields.is_empty() || node.kind() == "identifier").then_some(out);
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_normalises() {
        let x = Poly::var("x");
        let y = Poly::var("Y");
        // (x - 1) * Y + 2 == x*Y - Y + 2
        let lhs = x
            .sub(&Poly::constant(1))
            .and_then(|p| p.mul(&y))
            .and_then(|p| p.add(&Poly::constant(2)))
            .unwrap();
        let rhs = x
            .mul(&y)
            .and_then(|p| p.sub(&y))
            .and_then(|p| p.add(&Poly::constant(2)))
            .unwrap();
        assert_eq!(lhs, rhs);
        assert_eq!(lhs.sub(&rhs).and_then(|p| p.as_constant()), Some(0));
        assert!(lhs.mentions("x"));
        assert_eq!(lhs.as_constant(), None);
    }

    #[test]
    fn split_and_print() {
        let p = Poly::var("i")
            .mul(&Poly::var("p->mcols"))
            .and_then(|p| p.add(&Poly::var("j").scale(3)?))
            .and_then(|p| p.sub(&Poly::constant(2)))
            .unwrap();
        let (ci, rest) = p.split("i").unwrap();
        assert_eq!(ci, Poly::var("p->mcols"));
        assert_eq!(rest.to_c(), "-2L + 3L * (long)j");
        assert_eq!(p.mul(&Poly::var("i")).unwrap().split("i"), None);
        assert_eq!(Poly::default().to_c(), "0L");
    }

    #[test]
    fn substitute_replaces_every_occurrence() {
        // c * c + 2 * c - y with c = x - 1: x*x - 1 - y
        let c = Poly::var("c");
        let p = c
            .mul(&c)
            .and_then(|p| p.add(&c.scale(2)?))
            .and_then(|p| p.sub(&Poly::var("y")))
            .unwrap();
        let x1 = Poly::var("x").sub(&Poly::constant(1)).unwrap();
        let want = Poly::var("x")
            .mul(&Poly::var("x"))
            .and_then(|p| p.sub(&Poly::constant(1)))
            .and_then(|p| p.sub(&Poly::var("y")))
            .unwrap();
        let c_is: BTreeMap<String, Poly> = [("c".to_string(), x1.clone())].into();
        assert_eq!(p.substitute(&c_is), Some(want));
        let z_is: BTreeMap<String, Poly> = [("z".to_string(), x1)].into();
        assert_eq!(p.substitute(&z_is), Some(p.clone()));
    }

    #[test]
    fn substitution_replaces_names_by_polynomials() {
        // nx * ny * k + nx * j + i with nx := X, ny := Y + 2
        let p = Poly::var("nx")
            .mul(&Poly::var("ny"))
            .and_then(|p| p.mul(&Poly::var("k")))
            .and_then(|p| p.add(&Poly::var("nx").mul(&Poly::var("j"))?))
            .and_then(|p| p.add(&Poly::var("i")))
            .unwrap();
        let values: BTreeMap<String, Poly> = [
            ("nx".to_string(), Poly::var("X")),
            (
                "ny".to_string(),
                Poly::var("Y").add(&Poly::constant(2)).unwrap(),
            ),
        ]
        .into();
        let got = p.substitute(&values).unwrap();
        let want = Poly::var("X")
            .mul(&Poly::var("Y"))
            .and_then(|q| q.mul(&Poly::var("k")))
            .and_then(|q| q.add(&Poly::var("X").mul(&Poly::var("k"))?.scale(2)?))
            .and_then(|q| q.add(&Poly::var("X").mul(&Poly::var("j"))?))
            .and_then(|q| q.add(&Poly::var("i")))
            .unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn overflow_and_growth_give_none() {
        let max = Poly::constant(i64::MAX);
        assert_eq!(max.add(&Poly::constant(1)), None);
        assert_eq!(max.scale(2), None);
        assert_eq!(Poly::constant(i64::MIN).scale(-1), None);
        assert_eq!(max.mul(&Poly::constant(2)), None);
        let mut high = Poly::var("x");
        for _ in 1..MAX_DEGREE {
            high = high.mul(&Poly::var("x")).unwrap();
        }
        assert_eq!(high.mul(&Poly::var("x")), None);
        let mut wide = Poly::default();
        for i in 0..MAX_TERMS {
            wide = wide.add(&Poly::var(&format!("v{i}"))).unwrap();
        }
        assert_eq!(wide.add(&Poly::var("one_more")), None);
    }
}
