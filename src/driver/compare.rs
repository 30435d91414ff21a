//! Comparing what a translated program wrote with what the sequential one
//! wrote: the dumps (arrays bit for bit, reductions within a tolerance) and the
//! printed output. Shared by `tpace run` and `tpace compare`.

use super::Failure;
use super::dump::{self, ArrayCheck, DumpedArray};
use std::path::{Path, PathBuf};

/// The verdict on one pair of runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The first difference in the dumps, in words, if any.
    pub arrays: Option<String>,
    /// The first difference in the printed output beyond the tolerance, if any.
    pub printed: Option<String>,
    /// One line on the dumps: "identical (...)" or "DIFFERENT: ...".
    pub arrays_text: String,
    /// One line on the printed output: "the same", "... within tolerance" or "DIFFERENT ...".
    pub printed_text: String,
    /// Arrays not compared: the translation does not bring them back after their
    /// pipeline, since the program never reads them there ([`dump::unread`]).
    pub unread: Vec<String>,
}

impl Comparison {
    /// The first difference of either kind, in words.
    pub fn difference(&self) -> Option<String> {
        self.arrays.clone().or(self
            .printed
            .as_ref()
            .map(|d| format!("printed output, {d}")))
    }
}

/// Compare two runs' dumps and printed output; `rtol` as in
/// [`dump::first_difference_within`] (printed numbers take the float default),
/// arrays as `check` says.
pub fn judge(
    seq: &[DumpedArray],
    got: &[DumpedArray],
    seq_out: &str,
    got_out: &str,
    rtol: Option<f64>,
    check: ArrayCheck,
) -> Comparison {
    let arrays = dump::first_difference_with(seq, got, rtol, check);
    let identical = match check {
        ArrayCheck::Exact => "identical",
        ArrayCheck::Within(_) => "within the fast-math tolerance",
    };
    let printed = dump::printed_difference(seq_out, got_out, rtol.unwrap_or(dump::FLOAT_RTOL));
    let grids = seq.iter().filter(|a| !a.dims.is_empty()).count();
    let values = seq.len() - grids;
    let unread = dump::unread(seq, got);
    let compared = grids.saturating_sub(unread.len());
    let cells = seq
        .iter()
        .find(|a| !a.dims.is_empty())
        .map_or(0, |a| a.data.len() / a.elem.max(1));
    let skipped = match unread.as_slice() {
        [] => String::new(),
        [one] => format!(
            "; `{one}` not compared: the translation does not bring it back, the program never reads it after the pipeline"
        ),
        many => format!(
            "; {} not compared: the translation does not bring them back, the program never reads them after the pipeline",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let compared = crate::text::count(compared, "array", "arrays");
    let arrays_text = match &arrays {
        None if values == 0 => format!("{identical} ({compared}, {cells} cells each{skipped})"),
        None => format!(
            "{identical} ({compared}, {cells} cells each{skipped}), {values} reduction result(s) within tolerance"
        ),
        Some(d) => format!("DIFFERENT: first at {d}"),
    };
    let printed_text = match &printed {
        None if seq_out == got_out => "the same".to_string(),
        None => "the same, numbers within tolerance".to_string(),
        Some(d) => format!("DIFFERENT at {d}"),
    };
    Comparison {
        arrays,
        printed,
        arrays_text,
        printed_text,
        unread,
    }
}

/// What `tpace compare` prints and whether the runs agree.
#[derive(Debug, Clone)]
pub struct CompareOutcome {
    /// Lines for the terminal.
    pub summary: String,
    /// Whether dumps (and printed output, when given) agree.
    pub agree: bool,
}

/// `tpace compare`: two dump files and, when `stdout` names two files, the printed output.
pub fn compare(
    reference: &Path,
    translated: &Path,
    stdout: &[PathBuf],
    rtol: Option<f64>,
) -> Result<CompareOutcome, Failure> {
    let load =
        |p: &Path| dump::read(p).map_err(|e| Failure(format!("error: {}: {e}\n", p.display())));
    let text = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| Failure(format!("error: can not read {}: {e}\n", p.display())))
    };
    let (seq, got) = (load(reference)?, load(translated)?);
    if seq.is_empty() {
        return Err(Failure(format!(
            "error: {} holds no arrays: was the sequential program run with TPACE_DUMP set?\n",
            reference.display()
        )));
    }
    let (seq_out, got_out) = match stdout {
        [a, b] => (text(a)?, text(b)?),
        _ => (String::new(), String::new()),
    };
    let c = judge(&seq, &got, &seq_out, &got_out, rtol, ArrayCheck::Exact);
    let mut summary = format!("dumps: {}\n", c.arrays_text);
    if !stdout.is_empty() {
        summary.push_str(&format!("printed output: {}\n", c.printed_text));
    }
    Ok(CompareOutcome {
        summary,
        agree: c.difference().is_none(),
    })
}
