//! The driver: runs the passes in order and does what the command line asks
//! (translate, check, run, tune).

pub mod cc;
pub mod compare;
pub mod dump;
pub mod heatmap;
pub mod run;
pub mod tune;
pub mod tune_opencl;

use crate::back::{self, Output, Target};
use crate::diag;
pub use crate::front::preprocess::{Env, Options};
use crate::lower;
pub use crate::plan::{Compiled, compile_source};
use std::path::Path;

/// A failure with a message ready for the user (diagnostics already rendered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Read and compile a file, its macros and headers as the C preprocessor
/// sees them without options; diagnostics come back rendered.
pub fn compile_file(path: &Path) -> Result<Compiled, Failure> {
    compile_file_with(path, &Options::default())
}

/// Read and compile a file with a C compiler's `-D` and `-I` options: the C
/// preprocessor (`$CC`, else `cc`) is asked for the macros the file, its
/// headers and the options define, and the front end reads types and sizes
/// through them. Where the preprocessor fails, a warning says why and the
/// file's own `#define` lines stand in. Diagnostics come back rendered.
pub fn compile_file_with(path: &Path, options: &Options) -> Result<Compiled, Failure> {
    let shown = path.display().to_string();
    let source = std::fs::read_to_string(path)
        .map_err(|e| Failure(format!("error: cannot read {shown}: {e}\n")))?;
    let env = Env::of_file(path, &source, options);
    if let Some(why) = &env.fallback {
        eprintln!(
            "tpace: warning: {why}\n  note: tpace reads only the file's own #define lines; \
             give -I DIR and -D NAME=VALUE as to the C compiler"
        );
    }
    crate::front::parse_with(&shown, &source, &env)
        .and_then(crate::plan::compile_program)
        .map_err(|d| Failure(diag::render(&shown, &source, &d)))
}

/// The translated program for a target, planned for the default machine.
pub fn translate(compiled: &Compiled, target: Target) -> Result<Output, Failure> {
    translate_with(compiled, target, false)
}

/// The translation for `target` on the default machine; `mpi`: for several MPI
/// processes (`--mpi`).
pub fn translate_with(compiled: &Compiled, target: Target, mpi: bool) -> Result<Output, Failure> {
    let profile = crate::model::Profile::bundled(crate::model::cmodel::DEFAULT_MACHINE)
        .expect("the default machine profile is bundled");
    translate_for(compiled, target, &profile, mpi)
}

/// Translate for `target`, planned for the machine `profile` describes: each
/// pipeline's default plan is the model's best for that machine.
pub fn translate_for(
    compiled: &Compiled,
    target: Target,
    profile: &crate::model::Profile,
    mpi: bool,
) -> Result<Output, Failure> {
    let options = lower::Options {
        fuses: target.fuses_steps(),
        profile,
        steps_hook: target.chooses_steps(),
        mpi,
    };
    if target == Target::Opencl {
        // The OpenCL target's work groups come from the evolution-vector model.
        crate::model::evolution::EvolutionMachine::from_profile(profile).map_err(|e| {
            Failure(format!(
                "error: {e}\n  help: give --machine a profile with those figures (bundled: h100, c2070, xeon-phi-5110p)\n"
            ))
        })?;
    }
    let lowered = lower::lower(compiled, &options).map_err(|e| {
        let help = if e.starts_with("--mpi") {
            "--mpi changes the program where it starts; its main must be in the translated file"
                .to_string()
        } else {
            format!(
                "give --machine a profile with those figures (bundled: {})",
                crate::model::profile::bundled_names().join(", ")
            )
        };
        Failure(format!("error: {e}\n  help: {help}\n"))
    })?;
    Ok(back::write(target, &lowered))
}

/// Write a translation: its main file at `main` and, for a target that splits
/// the program, the host program beside it ([`back::host_path`]). All or
/// nothing: every file is written whole beside its place before any is put in
/// place, so that a failure leaves each output as it was.
pub fn write_output(main: &Path, output: &Output) -> Result<(), Failure> {
    let mut files = Vec::new();
    if let Some(host) = &output.host {
        let host_path = back::host_path(main);
        if host_path == main {
            return Err(Failure(format!(
                "error: the output {} would be overwritten by its host program\n  help: name the output with the extension .cu\n",
                main.display()
            )));
        }
        files.push((host_path, host.as_str()));
    }
    files.push((main.to_path_buf(), output.main.as_str()));
    for (path, _) in &files {
        if path.is_dir() {
            return Err(Failure(format!(
                "error: cannot write {}: it is a folder\n  help: give -o the name of a file\n",
                path.display()
            )));
        }
    }
    let staged = files
        .iter()
        .map(|(path, text)| stage(path, text))
        .collect::<Result<Vec<_>, _>>()?;
    // What each place held, to put back if a later file can not be put in place.
    let mut done: Vec<(&Path, Option<Vec<u8>>)> = Vec::new();
    for ((path, _), tmp) in files.iter().zip(staged) {
        let previous = std::fs::read(path).ok();
        if let Err(e) = tmp.persist(path) {
            for (earlier, before) in done {
                match before {
                    Some(bytes) => {
                        let _ = std::fs::write(earlier, bytes);
                    }
                    None => {
                        let _ = std::fs::remove_file(earlier);
                    }
                }
            }
            return Err(Failure(format!(
                "error: cannot write {}: {}\n",
                path.display(),
                e.error
            )));
        }
        done.push((path, previous));
    }
    Ok(())
}

/// Write a file all at once: a temporary file in the same folder, renamed into place,
/// so that a failure never leaves a half-written output.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), Failure> {
    stage(path, text)?.persist(path).map_err(|e| {
        Failure(format!(
            "error: cannot write {}: {}\n",
            path.display(),
            e.error
        ))
    })?;
    Ok(())
}

/// `text` in a temporary file in `path`'s folder, ready to be renamed into place
/// (removed if it never is).
fn stage(path: &Path, text: &str) -> Result<tempfile::NamedTempFile, Failure> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fail =
        |e: std::io::Error| Failure(format!("error: cannot write {}: {e}\n", path.display()));
    // Created as compilers create their output: 0666 less the umask.
    let mut tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(fail)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(fail)?;
    Ok(tmp)
}

/// A short human summary of what analysis found (for `tpace check`).
pub fn summary(compiled: &Compiled) -> String {
    compiled.units().map(pipeline_summary).collect()
}

/// What analysis found about one pipeline.
fn pipeline_summary(unit: crate::plan::Unit<'_>) -> String {
    let p = unit.pipeline;
    let f = unit.facts;
    let mut out = format!(
        "{}: pipeline of {} sweep(s) over a {}-D grid, cut along dim({})\n",
        p.location,
        p.body.len(),
        p.grid.rank(),
        p.grid.rank()
    );
    for (i, ((arr, t), transfer)) in p
        .arrays
        .iter()
        .zip(&f.arrays)
        .zip(&unit.plan.transfers)
        .enumerate()
    {
        out.push_str(&format!(
            "  array {:<10} {:<6} read={} written={} pure_temporary={} transfer={transfer:?}\n",
            arr.display_name(),
            arr.elem.c_name(),
            t.read,
            t.written,
            t.pure_temporary,
        ));
        let moves_out = matches!(
            transfer,
            crate::plan::Transfer::UpDown
                | crate::plan::Transfer::LastBlock
                | crate::plan::Transfer::Folded
        );
        if let Some(line) = unit.plan.unread_of(i, &arr.display_name()) {
            out.push_str(&format!("    {line}\n"));
        } else if let (true, crate::analysis::After::Read(why)) = (moves_out, &t.after) {
            out.push_str(&format!(
                "    downloaded after the last step: the program may read it after the pipeline ({why})\n"
            ));
        }
    }
    let halo = |h: &[crate::ir::Halo]| {
        h.iter()
            .map(|h| format!("[{}:{}]", h.minus, h.plus))
            .collect::<String>()
    };
    out.push_str(&format!(
        "  halo declared {} used {}; per step along the cut axis {}:{}\n",
        halo(&p.halo),
        halo(&f.halo_used),
        unit.plan.step_reach.minus,
        unit.plan.step_reach.plus
    ));
    for (s, sf) in f.sweeps.iter().enumerate() {
        let copy = sf.copy.map_or(String::new(), |(d, r)| {
            format!(
                " (copy {} -> {})",
                p.arrays[r].display_name(),
                p.arrays[d].display_name()
            )
        });
        let called = p.body[s].call.as_ref().map_or(String::new(), |c| {
            let (line, _) = crate::diag::line_col(&unit.program.source, c.span.start);
            format!(", in `{}` (called at line {line})", c.function)
        });
        out.push_str(&format!(
            "  sweep {}: {} flops/point{copy}{called}\n",
            s + 1,
            p.body[s].flops
        ));
        // Lower-dimensional sweeps: the plane they work on in each dimension without a loop.
        for l in p.body[s].loops.iter().filter(|l| l.fixed) {
            let who = if l.pos == 0 {
                "only the chunk holding that plane runs it"
            } else {
                "each chunk runs it on its own planes"
            };
            out.push_str(&format!(
                "    fixed dim({}) at index {}: {who}\n",
                p.grid.rank() - l.pos,
                l.lo
            ));
        }
        for v in &p.body[s].step_values {
            out.push_str(&format!(
                "    per-step value {} ({}), evaluated on the host each step\n",
                v.text, v.ty
            ));
        }
        for r in p.reductions.iter().filter(|r| r.sweep == s) {
            out.push_str(&format!(
                "    reduction {} ({}, {}): each point counted once per step\n",
                r.var,
                r.op.word(),
                r.elem.c_name()
            ));
        }
    }
    if !p.host.is_empty() {
        let (first, _) = crate::diag::line_col(&unit.program.source, p.host[0].span.start);
        out.push_str(&format!(
            "  host statements: {} (first at line {first}), replayed on the host step by step after the pipeline\n",
            p.host.len()
        ));
    }
    if let Some(r) = &p.rotation {
        let moves: Vec<String> = r
            .takes
            .iter()
            .enumerate()
            .filter(|(a, b)| a != *b)
            .map(|(a, b)| {
                format!(
                    "{} takes {}'s",
                    p.arrays[a].display_name(),
                    p.arrays[*b].display_name()
                )
            })
            .collect();
        out.push_str(&format!(
            "  pointers exchanged at the end of each step ({}; the same again after {} steps): the kernels follow them, the storage stays\n",
            moves.join(", "),
            r.period()
        ));
    }
    match &unit.plan.fusion {
        Some(fu) => out.push_str(&format!(
            "  fused kernels (CUDA): sweep {} advances {} steps per kernel by default (TPACE_FUSE 1 to {}, as far as the machine's shared memory holds {} bytes a block per step)\n",
            fu.sweep + 1,
            fu.default_steps,
            fu.max_steps,
            fu.shared_bytes(1)
        )),
        None if p.rotation.is_some() => out.push_str(
            "  fused kernels: none (not where pointers are exchanged between steps)\n",
        ),
        None => out.push_str(
            "  fused kernels: none (they need steps of one star-shaped sweep that reads only the array its copy refreshes, run as a swap, in 2 or 3 dimensions, without reductions, per-step values or subscripts through index variables)\n",
        ),
    }
    out.push_str(&format!(
        "  per point and step: {} flops, {} bytes\n",
        f.flops_per_point, f.bytes_per_point
    ));
    out
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn dates_from_day_counts() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_415), (2025, 11, 23));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
