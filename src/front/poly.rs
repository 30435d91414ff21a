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
            "number_literal" => {
                let text = src[node.byte_range()].trim_end_matches(['u', 'U', 'l', 'L']);
                text.parse::<i64>().ok().map(Poly::constant)
            }
            "identifier" => Some(Poly::var(&src[node.byte_range()])),
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
