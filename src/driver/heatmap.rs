//! The SVG heat map `tpace tune` writes (`heatmap.svg`), for both of its
//! sweeps: k × b for the out-of-core schedules, work group × T for OpenCL.
//! Each measured cell is coloured by its Glup/s, darker faster, with the value
//! written in it; a cell the program refused says so.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One heat map: labelled rows and columns, the measured cells by (row, column).
pub struct HeatMap<'a> {
    /// The first line, bold.
    pub title: &'a str,
    /// The second line: what a cell's number is.
    pub subtitle: &'a str,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// Column labels, left to right.
    pub columns: Vec<String>,
    /// Glup/s of each measured cell.
    pub cells: BTreeMap<(usize, usize), f64>,
    /// Cells the program refused or failed (shown as "refused" where nothing ran).
    pub refused: BTreeSet<(usize, usize)>,
    /// A cell outlined in red (the model's pick), if any.
    pub outlined: Option<(usize, usize)>,
    /// A cell's tooltip before its value (`k=8 b=64`).
    pub cell_name: &'a dyn Fn(usize, usize) -> String,
    /// The label under the columns.
    pub column_axis: &'a str,
    /// The label along the rows, turned (none when the row labels say it).
    pub row_axis: Option<&'a str>,
    /// Width and height of a cell, in pixels.
    pub cell: (f64, f64),
    /// Room for the row labels, in pixels.
    pub left: f64,
    /// Room under the grid, in pixels.
    pub bottom: f64,
}

/// Escape text for XML.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl HeatMap<'_> {
    /// The SVG text.
    pub fn svg(&self) -> String {
        let (cw, ch) = self.cell;
        let (left, top) = (self.left, 70.0);
        let (nr, nc) = (self.rows.len() as f64, self.columns.len() as f64);
        // Wide enough for the grid and for the title (about 8 px a character at 14 px).
        let width = (left + cw * nc + 40.0).max(self.title.chars().count() as f64 * 8.0 + 20.0);
        let height = top + ch * nr + self.bottom;
        let lo = self.cells.values().copied().fold(f64::INFINITY, f64::min);
        let hi = self.cells.values().copied().fold(0.0, f64::max);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
             viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{}</text>",
            width / 2.0,
            xml(self.title)
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"42\" text-anchor=\"middle\">{}</text>",
            width / 2.0,
            xml(self.subtitle)
        );
        for (j, label) in self.columns.iter().enumerate() {
            let _ = writeln!(
                s,
                "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
                left + cw * (j as f64 + 0.5),
                top - 8.0,
                xml(label)
            );
        }
        for (i, label) in self.rows.iter().enumerate() {
            let _ = writeln!(
                s,
                "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>",
                left - 8.0,
                top + ch * (i as f64 + 0.5) + 4.0,
                xml(label)
            );
        }
        for i in 0..self.rows.len() {
            for j in 0..self.columns.len() {
                let (x, y) = (left + cw * j as f64, top + ch * i as f64);
                let (cx, cy) = (x + cw / 2.0, y + ch / 2.0 + 4.0);
                match self.cells.get(&(i, j)) {
                    Some(&g) => {
                        let t = if hi > lo { (g - lo) / (hi - lo) } else { 1.0 };
                        // From pale yellow (slowest) to dark blue (fastest).
                        let mix = |a: f64, z: f64| (a + (z - a) * t).round() as u8;
                        let (r, gr, bl) = (mix(255.0, 8.0), mix(247.0, 48.0), mix(188.0, 107.0));
                        let ink = if t > 0.5 { "white" } else { "black" };
                        let outline = if self.outlined == Some((i, j)) {
                            "stroke=\"red\" stroke-width=\"3\""
                        } else {
                            "stroke=\"white\""
                        };
                        let _ = writeln!(
                            s,
                            "<rect x=\"{x:.0}\" y=\"{y:.0}\" width=\"{cw:.0}\" height=\"{ch:.0}\" \
                             fill=\"#{r:02x}{gr:02x}{bl:02x}\" {outline}><title>{}: {g:.3} Glup/s</title></rect>",
                            xml(&(self.cell_name)(i, j))
                        );
                        let _ = writeln!(
                            s,
                            "<text x=\"{cx:.0}\" y=\"{cy:.0}\" text-anchor=\"middle\" fill=\"{ink}\">{g:.3}</text>"
                        );
                    }
                    None if self.refused.contains(&(i, j)) => {
                        let _ = writeln!(
                            s,
                            "<text x=\"{cx:.0}\" y=\"{cy:.0}\" text-anchor=\"middle\" fill=\"gray\">refused</text>"
                        );
                    }
                    None => {}
                }
            }
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            left + cw * nc / 2.0,
            top + ch * nr + 28.0,
            xml(self.column_axis)
        );
        if let Some(axis) = self.row_axis {
            let middle = top + ch * nr / 2.0;
            let _ = writeln!(
                s,
                "<text x=\"20\" y=\"{middle:.0}\" text-anchor=\"middle\" transform=\"rotate(-90 20 {middle:.0})\">{}</text>",
                xml(axis)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_refusals_outline_and_labels() {
        let name = |i: usize, j: usize| format!("r{i} c{j} <&>");
        let map = HeatMap {
            title: "t & u",
            subtitle: "rates",
            rows: vec!["8".into(), "16".into()],
            columns: vec!["T = 1".into(), "T = 2".into()],
            cells: BTreeMap::from([((0, 0), 1.0), ((1, 1), 3.0)]),
            refused: BTreeSet::from([(0, 1)]),
            outlined: Some((1, 1)),
            cell_name: &name,
            column_axis: "columns",
            row_axis: Some("rows"),
            cell: (84.0, 40.0),
            left: 90.0,
            bottom: 70.0,
        };
        let svg = map.svg();
        assert_eq!(svg.matches("<rect").count(), 2, "{svg}");
        assert_eq!(svg.matches("stroke=\"red\"").count(), 1, "{svg}");
        assert!(svg.contains("r1 c1 &lt;&amp;&gt;: 3.000 Glup/s"), "{svg}");
        assert_eq!(svg.matches(">refused<").count(), 1, "{svg}");
        assert!(
            svg.contains("t &amp; u") && svg.contains("rotate(-90"),
            "{svg}"
        );
        // The slowest cell is pale, the fastest dark.
        assert!(
            svg.contains("fill=\"#fff7bc\"") && svg.contains("fill=\"#08306b\""),
            "{svg}"
        );
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    }
}
