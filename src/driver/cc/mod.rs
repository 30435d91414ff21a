//! `tpace cc`: a C compiler for build systems (`make CC='tpace cc --target
//! cuda'`, CMake's `CC`). It takes a C compiler's command line, translates
//! each C source that holds `#pragma tpace` or `#pragma stencil` lines, hands
//! every other file to the C compiler untouched, and compiles and links with
//! the tools the target needs ([`tools`]). `-c` gives the one object a build
//! system expects: a CUDA translation's kernels and host program are compiled
//! apart and joined into it. Nothing is left half-written: an object is put
//! in place only once it is complete.

pub mod args;
pub mod tools;

use super::Failure;
use crate::back::Target;
use args::{Invocation, LinkItem, Mode};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use tools::Tools;

/// Run `tpace cc` with the arguments after `cc`; prints what goes wrong.
pub fn main(argv: &[String]) -> ExitCode {
    if argv.iter().any(|a| a == "--help") {
        print!("{}", args::HELP);
        return ExitCode::SUCCESS;
    }
    let outcome = args::parse(argv)
        .map_err(|e| Failure(format!("tpace cc: error: {e}\n  help: tpace cc --help\n")))
        .and_then(|inv| run(&inv, &Tools::from_env()));
    match outcome {
        Ok(code) => code,
        Err(Failure(msg)) => {
            eprint!("{msg}");
            ExitCode::from(1)
        }
    }
}

/// Do what the command line asks.
pub fn run(inv: &Invocation, tools: &Tools) -> Result<ExitCode, Failure> {
    let sources: Vec<&Path> = inv
        .link
        .iter()
        .filter_map(|l| match l {
            LinkItem::Source(p) => Some(p.as_path()),
            _ => None,
        })
        .collect();
    if inv.mode == Mode::Ask {
        return status(inv, tools.untouched(inv), "the C compiler");
    }
    if inv.mode == Mode::Compile && sources.len() > 1 && inv.output.is_some() {
        return Err(Failure(
            "tpace cc: error: -o with -c names one object, and there are several sources\n  \
             help: compile one source a command, or leave out -o\n"
                .into(),
        ));
    }
    let translated = sources
        .iter()
        .map(|s| holds_directives(s))
        .collect::<Result<Vec<bool>, Failure>>()?;
    if inv.mode == Mode::Compile && !translated.contains(&true) {
        // Nothing to translate: the C compiler, as it was asked.
        return status(inv, tools.untouched(inv), "the C compiler");
    }
    let work = tempfile::Builder::new()
        .prefix("tpace-cc-")
        .tempdir()
        .map_err(|e| {
            Failure(format!(
                "tpace cc: error: cannot make a scratch folder: {e}\n"
            ))
        })?;
    let mut objects: Vec<PathBuf> = Vec::new();
    for (n, (source, translate)) in sources.iter().zip(&translated).enumerate() {
        let object = match (inv.mode, &inv.output) {
            (Mode::Compile, Some(o)) => o.clone(),
            (Mode::Compile, None) => {
                PathBuf::from(source.file_name().unwrap_or_default()).with_extension("o")
            }
            _ => work.path().join(format!("{n}.o")),
        };
        if *translate {
            // A scratch folder per source: two sources may have the same name.
            let scratch = work.path().join(n.to_string());
            compile_translated(inv, tools, source, &object, &scratch)?;
        } else {
            run_tool(
                inv,
                tools.compile_plain(inv, source, &object),
                "the C compiler",
            )?;
        }
        objects.push(object);
    }
    if inv.mode == Mode::Compile {
        return Ok(ExitCode::SUCCESS);
    }
    let mut objects = objects.into_iter();
    let items: Vec<Vec<String>> = inv
        .link
        .iter()
        .map(|item| match item {
            LinkItem::Source(_) => {
                vec![objects.next().unwrap_or_default().display().to_string()]
            }
            LinkItem::File(p) => vec![p.display().to_string()],
            LinkItem::Flag(words) => words.clone(),
        })
        .collect();
    let output = inv.output.clone().unwrap_or_else(|| PathBuf::from("a.out"));
    run_tool(inv, tools.link(inv, &items, &output), "the link")?;
    Ok(ExitCode::SUCCESS)
}

/// Whether a C source holds `#pragma tpace` or `#pragma stencil` lines.
fn holds_directives(source: &Path) -> Result<bool, Failure> {
    let text = std::fs::read_to_string(source).map_err(|e| {
        Failure(format!(
            "tpace cc: error: cannot read {}: {e}\n",
            source.display()
        ))
    })?;
    Ok(crate::front::pragmas::scan(&text)
        .iter()
        .any(|p| matches!(p.dialect(), "tpace" | "stencil")))
}

/// Translate `source` and compile the translation into `object`, which is
/// put in place only when it is whole; its dependency file too when asked. On
/// a failure no object is left, not even an earlier one (a build system must
/// not take it for this source's).
fn compile_translated(
    inv: &Invocation,
    tools: &Tools,
    source: &Path,
    object: &Path,
    work: &Path,
) -> Result<(), Failure> {
    let built = build_translated(inv, tools, source, object, work);
    if built.is_err() {
        let _ = std::fs::remove_file(object);
    }
    built
}

/// [`compile_translated`]'s work.
fn build_translated(
    inv: &Invocation,
    tools: &Tools,
    source: &Path,
    object: &Path,
    work: &Path,
) -> Result<(), Failure> {
    let options = super::Options {
        defines: inv.defines.clone(),
        include_dirs: inv.include_dirs.clone(),
        extra: inv
            .preprocessor
            .iter()
            .filter(|w| !(w[0].starts_with("-D") || w[0].starts_with("-I")))
            .flatten()
            .cloned()
            .chain(inv.std.iter().map(|s| format!("-std={s}")))
            .collect(),
        cc: Some(tools.cc_line()),
    };
    let compiled = super::compile_file_with(source, &options)?;
    let profile =
        crate::model::Profile::load(&inv.machine).map_err(|e| Failure(format!("error: {e}\n")))?;
    let out = super::translate_for(&compiled, inv.target, &profile, inv.mpi)?;
    let dir = inv.keep.as_deref().unwrap_or(work);
    for d in [dir, work] {
        std::fs::create_dir_all(d).map_err(|e| {
            Failure(format!(
                "tpace cc: error: cannot make {}: {e}\n",
                d.display()
            ))
        })?;
    }
    let stem = source.file_stem().unwrap_or_default().to_string_lossy();
    let source_dir = match source.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let main = dir.join(format!("{stem}.{}", inv.target.extension()));
    super::write_output(&main, &out)?;
    // The object goes beside its place under a scratch name, and into it at the end.
    let parent = match object.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let staged = tempfile::Builder::new()
        .prefix(".tpace-cc-")
        .suffix(".o")
        .tempfile_in(&parent)
        .map_err(|e| {
            Failure(format!(
                "tpace cc: error: cannot write an object in {}: {e}\n",
                parent.display()
            ))
        })?;
    let built = match inv.target {
        Target::Cuda => {
            let host = crate::back::host_path(&main);
            let kernels_o = work.join(format!("{stem}.kernels.o"));
            let host_o = work.join(format!("{stem}.host.o"));
            let what = if inv.emulate {
                "the C++ compiler"
            } else {
                "nvcc"
            };
            run_tool(inv, tools.compile_kernels(inv, &main, &kernels_o), what)?;
            run_tool(
                inv,
                tools.compile_translated_c(inv, &host, &source_dir, &host_o),
                "the C compiler",
            )?;
            let joined = work.join(format!("{stem}.joined.o"));
            run_tool(
                inv,
                tools.combine(&[&kernels_o, &host_o], &joined),
                "the C compiler joining the kernels' and the host program's objects",
            )?;
            // tpace's own functions (hooks, launchers, the runtime's) become the object's
            // own, so that two translated files link together; the program's stay global.
            let user = tools::global_symbols(&host_o)?;
            let tpace: Vec<String> = tools::global_symbols(&joined)?
                .into_iter()
                .filter(|(name, kind)| {
                    name.contains("tpace_")
                        && "TDBRC".contains(*kind)
                        && !user
                            .iter()
                            .any(|(u, _)| u == name && !u.starts_with("tpace_"))
                })
                .map(|(name, _)| name)
                .collect();
            let list = work.join(format!("{stem}.tpace-symbols"));
            std::fs::write(&list, tpace.join("\n") + "\n").map_err(|e| {
                Failure(format!(
                    "tpace cc: error: cannot write {}: {e}\n",
                    list.display()
                ))
            })?;
            run_tool(
                inv,
                tools::localize(&joined, &list, staged.path()),
                "objcopy",
            )
        }
        _ => run_tool(
            inv,
            tools.compile_translated_c(inv, &main, &source_dir, staged.path()),
            "the C compiler",
        ),
    };
    built?;
    if inv.deps.write.is_some() {
        // The rule's target: the object the build system named.
        let target = match inv.mode {
            Mode::Compile => object.to_path_buf(),
            _ => PathBuf::from(source.file_name().unwrap_or_default()).with_extension("o"),
        };
        run_tool(
            inv,
            tools.dependencies(inv, source, &target, &dependency_file(inv, source)),
            "the C preprocessor",
        )?;
    }
    staged.persist(object).map_err(|e| {
        Failure(format!(
            "tpace cc: error: cannot write {}: {}\n",
            object.display(),
            e.error
        ))
    })?;
    Ok(())
}

/// Where `-MD`/`-MMD` write the dependencies: `-MF`, else the object's name
/// with `.d` (as gcc names it), or the source's without `-c -o`.
fn dependency_file(inv: &Invocation, source: &Path) -> PathBuf {
    match (&inv.deps.file, inv.mode, &inv.output) {
        (Some(f), _, _) => f.clone(),
        (None, Mode::Compile, Some(o)) => o.with_extension("d"),
        _ => PathBuf::from(source.file_name().unwrap_or_default()).with_extension("d"),
    }
}

/// Run a tool, showing the command with `--show-commands`; a failure names it
/// (the tool has said what went wrong).
fn run_tool(inv: &Invocation, mut cmd: Command, what: &str) -> Result<(), Failure> {
    show(inv, &cmd);
    let status = cmd.status().map_err(|e| cannot_run(&cmd, what, &e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure(format!(
            "tpace cc: error: {what} failed ({}): {}\n",
            status,
            shown(&cmd)
        )))
    }
}

/// Run a tool and exit as it exits.
fn status(inv: &Invocation, mut cmd: Command, what: &str) -> Result<ExitCode, Failure> {
    show(inv, &cmd);
    let status = cmd.status().map_err(|e| cannot_run(&cmd, what, &e))?;
    Ok(ExitCode::from(
        status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)),
    ))
}

fn cannot_run(cmd: &Command, what: &str, e: &std::io::Error) -> Failure {
    Failure(format!(
        "tpace cc: error: cannot run {what}, `{}`: {e}\n  help: install it, or name it with \
         TPACE_CC, TPACE_CXX, NVCC, MPICC or MPICXX (tpace cc --help)\n",
        cmd.get_program().to_string_lossy()
    ))
}

fn show(inv: &Invocation, cmd: &Command) {
    if inv.show {
        eprintln!("tpace cc: {}", shown(cmd));
    }
}

/// A command as a shell line.
fn shown(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|w| crate::text::shell_word(&w.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}
