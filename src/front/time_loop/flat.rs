//! Flat (linearised) subscripts: `a[(x - lo) * NY + y]`, or Himeno's
//! `MR(p,0,i+1,j,k)`, which expands to `p->m[(0) * p->mrows * p->mcols *
//! p->mdeps + (i+1) * p->mcols * p->mdeps + (j) * p->mdeps + (k)]`.
//!
//! A flat subscript is read as a polynomial: the coefficient of each loop
//! index is the stride the program uses along that dimension, and what is
//! left is a constant offset per dimension plus, where a constant macro
//! argument multiplies a stride of its own (Himeno's component `n`), a
//! component of the array. The strides may be run-time values (`p->mcols`):
//! they must equal the row-major strides of the `size` clause, which the host
//! program checks before the pipeline starts ([`crate::ir::LayoutCheck`]).

use crate::diag::{DiagResult, Diagnostic};
use crate::front::poly::Poly;
use crate::ir::{Array, Grid, LayoutCheck, Span, Sweep};
use std::collections::BTreeMap;

/// Largest offset magnitude tried when decomposing a flat subscript.
const MAX_FLAT_OFFSET: i64 = 8;

/// Most components a flat array may be split into (as for `a[C][..]`).
const MAX_COMPONENTS: i64 = 64;

/// What one flat access says beyond its offsets.
#[derive(Debug, Clone)]
pub struct FlatAccess {
    /// Index into the pipeline's arrays as listed (before components are split).
    pub array: usize,
    /// The stride the subscript uses along each grid position, outermost first.
    pub strides: Vec<Poly>,
    /// The component a constant macro argument selects and that argument's stride.
    pub component: Option<(i64, Poly)>,
    /// Where the access is written.
    pub span: Span,
}

/// Why a flat subscript could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not a loop index times a stride plus constants, per dimension.
    NotAffine,
    /// Two constant arguments multiply strides that no dimension has.
    TwoComponents,
}

/// A decomposed flat subscript: offsets per position, strides, component.
pub type Decomposed = (Vec<i64>, Vec<Poly>, Option<(i64, Poly)>);

/// Decompose `index` (a polynomial in the loop indices `vars`, by grid
/// position, and the `symbols` standing for a macro's constant arguments,
/// with their values). The subscript is read relative to the grid's first
/// indices `los`: element `(lo_0 + c_0, ...)` is at `sum c_p * stride_p`.
pub fn decompose(
    index: &Poly,
    vars: &[&str],
    los: &[Poly],
    symbols: &[(String, i64)],
) -> Result<Decomposed, Problem> {
    let moving: Vec<&str> = vars
        .iter()
        .copied()
        .chain(symbols.iter().map(|(s, _)| s.as_str()))
        .collect();
    let fixed = |p: &Poly| !moving.iter().any(|v| p.mentions(v));
    let mut rest = index.clone();
    let mut strides = Vec::new();
    for var in vars {
        let (s, r) = rest.split(var).ok_or(Problem::NotAffine)?;
        if !fixed(&s) || s.as_constant() == Some(0) {
            return Err(Problem::NotAffine);
        }
        strides.push(s);
        rest = r;
    }
    let mut component = None;
    for (sym, value) in symbols {
        let (u, r) = rest.split(sym).ok_or(Problem::NotAffine)?;
        if !fixed(&u) {
            return Err(Problem::NotAffine);
        }
        rest = r;
        let plain_offset = u.as_constant().is_some() || strides.contains(&u);
        if plain_offset {
            rest = rest
                .add(&u.scale(*value).ok_or(Problem::NotAffine)?)
                .ok_or(Problem::NotAffine)?;
        } else if component.is_some() {
            return Err(Problem::TwoComponents);
        } else {
            component = Some((*value, u));
        }
    }
    if !fixed(&rest) {
        return Err(Problem::NotAffine);
    }
    // Relative to the first grid element: add lo_p * stride_p back.
    for (lo, s) in los.iter().zip(&strides) {
        rest = rest
            .add(&lo.mul(s).ok_or(Problem::NotAffine)?)
            .ok_or(Problem::NotAffine)?;
    }
    let offsets = offsets(&rest, &strides).ok_or(Problem::NotAffine)?;
    Ok((offsets, strides, component))
}

/// The smallest constant offsets `c` with `rest == sum c_p * strides_p`
/// (smallest first, so that literal extents cannot pick a far-away alias).
fn offsets(rest: &Poly, strides: &[Poly]) -> Option<Vec<i64>> {
    let rank = strides.len();
    for radius in 0..=MAX_FLAT_OFFSET {
        let mut c = vec![-radius; rank];
        loop {
            if c.iter().any(|v| v.abs() == radius) {
                let sum = c
                    .iter()
                    .zip(strides)
                    .try_fold(Poly::constant(0), |acc, (ci, s)| acc.add(&s.scale(*ci)?));
                if sum.as_ref() == Some(rest) {
                    return Some(c);
                }
            }
            // Odometer over [-radius, radius]^rank.
            let mut i = 0;
            while i < rank {
                c[i] += 1;
                if c[i] <= radius {
                    break;
                }
                c[i] = -radius;
                i += 1;
            }
            if i == rank {
                break;
            }
        }
        if rank == 0 {
            break;
        }
    }
    None
}

/// The row-major strides of the `size` clause (`extents` read as
/// polynomials), outermost first, and the number of grid elements.
pub fn grid_strides(extents: &[Poly]) -> Option<(Vec<Poly>, Poly)> {
    let rank = extents.len();
    let mut strides = vec![Poly::constant(1); rank];
    for p in (0..rank.saturating_sub(1)).rev() {
        strides[p] = strides[p + 1].mul(&extents[p + 1])?;
    }
    let total = strides.first()?.mul(extents.first()?)?;
    Some((strides, total))
}

/// Give the flat arrays what their accesses say: a layout check wherever a
/// stride the program uses is not the `size` clause's, and, for an array
/// whose accesses select components, one array per component (`a->m[3]`,
/// based at `a->m + 3 * stride`), with every access renumbered. `extents` are
/// the `size` extents read one or more ways (as written, with macros
/// expanded): a stride equal to the grid's in any of them needs no check.
pub fn resolve(
    arrays: Vec<Array>,
    body: &mut [Sweep],
    flats: &[FlatAccess],
    grid: &Grid,
    extents: &[Vec<Poly>],
) -> DiagResult<Vec<Array>> {
    let readings: Vec<(Vec<Poly>, Poly)> = extents.iter().filter_map(|e| grid_strides(e)).collect();
    let Some((grid_strides, total)) = readings.first().cloned() else {
        return Ok(arrays);
    };
    let is_grid_stride = |pos: usize, s: &Poly| readings.iter().any(|(g, _)| &g[pos] == s);
    let is_total = |s: &Poly| readings.iter().any(|(_, t)| t == s);
    let rank = grid.rank();
    let mut errors = Vec::new();
    let mut out: Vec<Array> = Vec::new();
    // (array as listed, component) -> index in `out`.
    let mut renumber: BTreeMap<(usize, Option<i64>), usize> = BTreeMap::new();
    for (a, array) in arrays.into_iter().enumerate() {
        let mine: Vec<&FlatAccess> = flats.iter().filter(|f| f.array == a).collect();
        if mine.is_empty() {
            renumber.insert((a, None), out.len());
            out.push(array);
            continue;
        }
        let mut checks = array.checks.clone();
        for pos in 0..rank {
            let dim = rank - pos;
            let mut seen: Vec<&Poly> = Vec::new();
            for f in &mine {
                let s = &f.strides[pos];
                let g = &grid_strides[pos];
                if is_grid_stride(pos, s) || seen.contains(&s) {
                    continue;
                }
                seen.push(s);
                let constant = readings.iter().find_map(|(g, _)| g[pos].as_constant());
                if let (Some(sv), Some(gv)) = (s.as_constant(), constant) {
                    errors.push(Diagnostic::new(
                        f.span.clone(),
                        format!(
                            "`{}` is indexed with a stride of {sv} in dim({dim}), but the `size` \
                             clause's extents give {gv}",
                            array.name
                        ),
                        "stride is not the grid's",
                        "a flat subscript must be row-major over the `size` extents: \
                         `(x - lo) * <product of the inner extents> + ...`; check the size clause",
                    ));
                    continue;
                }
                checks.push(LayoutCheck {
                    holds: format!("{} == {}", s.to_c(), g.to_c()),
                    otherwise: format!(
                        "array `{}` is indexed with a stride of {} in dim({dim}), which is not the \
                         {} of the size clause's extents",
                        array.name,
                        s.to_text(),
                        g.to_text()
                    ),
                });
            }
        }
        let strides: Vec<&Poly> = mine
            .iter()
            .filter_map(|f| f.component.as_ref().map(|c| &c.1))
            .collect();
        let Some(stride) = strides.first().copied() else {
            renumber.insert((a, None), out.len());
            out.push(Array { checks, ..array });
            continue;
        };
        if let Some(f) = mine
            .iter()
            .find(|f| f.component.as_ref().is_some_and(|c| &c.1 != stride))
        {
            errors.push(Diagnostic::new(
                f.span.clone(),
                format!(
                    "the component of `{}` is selected with another stride here than elsewhere",
                    array.name
                ),
                "component stride differs",
                format!(
                    "index every component of `{}` with the same stride ({}), e.g. through one macro",
                    array.name,
                    stride.to_text()
                ),
            ));
            continue;
        }
        let mut values: Vec<i64> = mine
            .iter()
            .map(|f| f.component.as_ref().map_or(0, |c| c.0))
            .collect();
        values.sort_unstable();
        values.dedup();
        if values == [0] {
            // Every access is component 0: the array itself, based where it points.
            for key in [(a, None), (a, Some(0))] {
                renumber.insert(key, out.len());
            }
            out.push(Array { checks, ..array });
            continue;
        }
        if let Some(bad) = values.iter().find(|v| !(0..MAX_COMPONENTS).contains(*v)) {
            let f = mine
                .iter()
                .find(|f| f.component.as_ref().is_some_and(|c| c.0 == *bad))
                .expect("the value came from an access");
            errors.push(Diagnostic::new(
                f.span.clone(),
                format!("component {bad} of `{}` is out of range", array.name),
                "component index",
                format!(
                    "tpace takes components 0 to {} of a flat array",
                    MAX_COMPONENTS - 1
                ),
            ));
            continue;
        }
        if !is_total(stride) {
            let both = stride.as_constant().zip(total.as_constant());
            if both.is_none_or(|(s, t)| s < t) {
                checks.push(LayoutCheck {
                    holds: format!("{} >= {}", stride.to_c(), total.to_c()),
                    otherwise: format!(
                        "the components of array `{}` are {} elements apart, fewer than the {} of \
                         the grid: they overlap",
                        array.name,
                        stride.to_text(),
                        total.to_text()
                    ),
                });
            }
        }
        for (n, v) in values.into_iter().enumerate() {
            renumber.insert((a, Some(v)), out.len());
            if v == 0 {
                renumber.insert((a, None), out.len());
            }
            out.push(Array {
                host_base: format!("(void *)(({}) + {v}L * ({}))", array.name, stride.to_c()),
                // The checks hold for the block: said once, with its first component.
                checks: if n == 0 {
                    checks.clone()
                } else {
                    array.checks.clone()
                },
                component: Some(v as u32),
                ..array.clone()
            });
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let component_at: BTreeMap<usize, Option<i64>> = flats
        .iter()
        .map(|f| (f.span.start, f.component.as_ref().map(|c| c.0)))
        .collect();
    for sweep in body.iter_mut() {
        for acc in &mut sweep.accesses {
            let component = component_at.get(&acc.span.start).copied().flatten();
            acc.array = renumber
                .get(&(acc.array, component))
                .or_else(|| renumber.get(&(acc.array, None)))
                .copied()
                .expect("every access's array is kept");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::cst::parse_c;

    fn poly(expr: &str) -> Poly {
        let src = format!("long e = {expr};");
        let tree = parse_c(&src);
        let d = tree.root_node().named_child(0).unwrap();
        let v = d
            .child_by_field_name("declarator")
            .unwrap()
            .child_by_field_name("value")
            .unwrap();
        Poly::from_node(v, &src).unwrap()
    }

    #[test]
    fn himeno_macro_subscript_with_a_component() {
        let i = "tpace_k0 * a->mrows * a->mcols * a->mdeps + (i+1) * a->mcols * a->mdeps + (j-1) * a->mdeps + k";
        let zero = [Poly::constant(0), Poly::constant(0), Poly::constant(0)];
        let (c, s, comp) =
            decompose(&poly(i), &["i", "j", "k"], &zero, &[("tpace_k0".into(), 3)]).unwrap();
        assert_eq!(c, [1, -1, 0]);
        assert_eq!(s[0], poly("a->mcols * a->mdeps"));
        assert_eq!(s[2], Poly::constant(1));
        let (v, u) = comp.unwrap();
        assert_eq!((v, u), (3, poly("a->mrows * a->mcols * a->mdeps")));
    }

    #[test]
    fn a_constant_argument_along_a_dimension_is_an_offset() {
        // `IDX(a, i, j, 1)` with `#define IDX(a,i,j,o) a[(i)*N + (j) + (o)]`.
        let (c, _, comp) = decompose(
            &poly("i*N + j + tpace_k0"),
            &["i", "j"],
            &[Poly::constant(0), Poly::constant(0)],
            &[("tpace_k0".into(), 1)],
        )
        .unwrap();
        assert_eq!((c, comp), (vec![0, 1], None));
    }

    #[test]
    fn relative_to_the_first_index_and_refusals() {
        let los = [Poly::constant(1), Poly::constant(0)];
        let (c, _, _) = decompose(&poly("(x - 2) * Y + y + 1"), &["x", "y"], &los, &[]).unwrap();
        assert_eq!(c, [-1, 1]);
        assert_eq!(
            decompose(&poly("x * x + y"), &["x", "y"], &los, &[]),
            Err(Problem::NotAffine)
        );
        assert_eq!(
            decompose(&poly("(x - 1) * Y + y + 20"), &["x", "y"], &los, &[]),
            Err(Problem::NotAffine)
        );
        let two = [("s".to_string(), 1), ("t".to_string(), 2)];
        assert_eq!(
            decompose(
                &poly("s * A + t * B + x * Y + y"),
                &["x", "y"],
                &[Poly::constant(0), Poly::constant(0)],
                &two
            ),
            Err(Problem::TwoComponents)
        );
    }
}
