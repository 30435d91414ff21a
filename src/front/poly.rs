//! Integer polynomials over C identifiers, used to read subscripts such as
//! `a[(x-1)*Y + y + 1]` as "index plus constant offset" per dimension.

use std::collections::BTreeMap;
use tree_sitter::Node;

/// A polynomial with integer coefficients; each monomial is a sorted list of identifiers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Poly {
    terms: BTreeMap<Vec<String>, i64>,
}

impl Poly {
    /// The constant `c`.
    pub fn constant(c: i64) -> Poly {
        let mut p = Poly::default();
        p.add_term(Vec::new(), c);
        p
    }

    /// The identifier `name`.
    pub fn var(name: &str) -> Poly {
        let mut p = Poly::default();
        p.add_term(vec![name.to_string()], 1);
        p
    }

    fn add_term(&mut self, mono: Vec<String>, c: i64) {
        let e = self.terms.entry(mono).or_insert(0);
        *e += c;
        if *e == 0 {
            self.terms.retain(|_, v| *v != 0);
        }
    }

    /// `self + other`
    pub fn add(&self, other: &Poly) -> Poly {
        let mut r = self.clone();
        for (m, c) in &other.terms {
            r.add_term(m.clone(), *c);
        }
        r
    }

    /// `self * k`
    pub fn scale(&self, k: i64) -> Poly {
        let mut r = Poly::default();
        for (m, c) in &self.terms {
            r.add_term(m.clone(), c * k);
        }
        r
    }

    /// `self - other`
    pub fn sub(&self, other: &Poly) -> Poly {
        self.add(&other.scale(-1))
    }

    /// `self * other`
    pub fn mul(&self, other: &Poly) -> Poly {
        let mut r = Poly::default();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                let mut m: Vec<String> = m1.iter().chain(m2).cloned().collect();
                m.sort();
                r.add_term(m, c1 * c2);
            }
        }
        r
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

    /// Read a C expression; `None` if it is not a polynomial in identifiers and integers.
    pub fn from_node(node: Node, src: &str) -> Option<Poly> {
        match node.kind() {
            "number_literal" => {
                let text = src[node.byte_range()].trim_end_matches(['u', 'U', 'l', 'L']);
                text.parse::<i64>().ok().map(Poly::constant)
            }
            "identifier" => Some(Poly::var(&src[node.byte_range()])),
            "parenthesized_expression" => Poly::from_node(node.named_child(0)?, src),
            "unary_expression" => {
                let arg = Poly::from_node(node.child_by_field_name("argument")?, src)?;
                match &src[node.child_by_field_name("operator")?.byte_range()] {
                    "-" => Some(arg.scale(-1)),
                    "+" => Some(arg),
                    _ => None,
                }
            }
            "binary_expression" => {
                let l = Poly::from_node(node.child_by_field_name("left")?, src)?;
                let r = Poly::from_node(node.child_by_field_name("right")?, src)?;
                match &src[node.child_by_field_name("operator")?.byte_range()] {
                    "+" => Some(l.add(&r)),
                    "-" => Some(l.sub(&r)),
                    "*" => Some(l.mul(&r)),
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
        let lhs = x.sub(&Poly::constant(1)).mul(&y).add(&Poly::constant(2));
        let rhs = x.mul(&y).sub(&y).add(&Poly::constant(2));
        assert_eq!(lhs, rhs);
        assert_eq!(lhs.sub(&rhs).as_constant(), Some(0));
        assert!(lhs.mentions("x"));
        assert_eq!(lhs.as_constant(), None);
    }
}
