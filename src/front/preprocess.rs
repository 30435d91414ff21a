//! Asking the C preprocessor what a file's macros are: `cc -E -dD` with the
//! command line's `-I` and `-D` over the file lists every definition in order,
//! with line markers that say which file (the program's own, a header found
//! through `-I` or quotes, a system header, the command line) each comes from,
//! and the headers' declarations (typedefs, structs) between them.
//!
//! The analysis uses what it learns; the output keeps the user's text.

use super::macros::MacroTable;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the user's C compiler would see the file: `-D` and `-I` options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-D NAME[=VALUE]`, as `NAME` or `NAME=VALUE`.
    pub defines: Vec<String>,
    /// `-I DIR`, in order.
    pub include_dirs: Vec<PathBuf>,
    /// Other preprocessor flags for the C preprocessor's run, after the
    /// others (`-U NAME`, `-isystem DIR`, `-std=c99`), as words.
    pub extra: Vec<String>,
    /// The C compiler whose preprocessor is asked (default: `$CC`, else `cc`, else `gcc`).
    pub cc: Option<String>,
}

/// What the front end knows about names beyond the file's own text.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Every macro defined at the end of the file (the headers' and the command line's too).
    pub macros: MacroTable,
    /// Macros the program defines itself: in the file, in headers that are not
    /// system headers, or with `-D`.
    pub user_macros: BTreeSet<String>,
    /// The declarations of the headers the file includes, preprocessed (empty
    /// when no preprocessor ran): where typedefs and structs are looked up
    /// when the file does not declare them itself.
    pub headers: String,
    /// Why the preprocessor could not be asked, if it could not (the file's
    /// own `#define`s stood in).
    pub fallback: Option<String>,
    /// The `-I` folders, where the program's own headers are found.
    pub include_dirs: Vec<PathBuf>,
}

impl Env {
    /// The file's own `#define` lines and the `-D` options, without a preprocessor.
    pub fn from_source(source: &str, options: &Options) -> Env {
        let macros = MacroTable::from_source(source, &options.defines);
        let mut user_macros: BTreeSet<String> = own_macro_names(source);
        user_macros.extend(options.defines.iter().map(|d| define_name(d).to_string()));
        Env {
            macros,
            user_macros,
            headers: String::new(),
            fallback: None,
            include_dirs: options.include_dirs.clone(),
        }
    }

    /// Ask the C preprocessor (`$CC`, else `cc`) about the file at `path`; the
    /// file's own lines (with the reason) if it can not be run or fails.
    pub fn of_file(path: &Path, source: &str, options: &Options) -> Env {
        match run(path, options) {
            Ok(text) => {
                let mut env = parse(&text, path);
                // Names the file defines on branches the preprocessor did not take
                // are still the user's: setting aside an undefined macro is harmless.
                env.user_macros.extend(own_macro_names(source));
                env.include_dirs = options.include_dirs.clone();
                env
            }
            Err(why) => Env {
                fallback: Some(why),
                ..Env::from_source(source, options)
            },
        }
    }
}

/// The name a `-D` option defines.
fn define_name(option: &str) -> &str {
    option.split_once('=').map_or(option, |(n, _)| n).trim()
}

/// Names of the macros the file's own `#define` lines define, on any branch.
fn own_macro_names(source: &str) -> BTreeSet<String> {
    source
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("define")?;
            if !rest.starts_with([' ', '\t']) {
                return None;
            }
            let rest = rest.trim_start();
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (len > 0).then(|| rest[..len].to_string())
        })
        .collect()
}

/// `cc -E -dD` over the file (`$CC` if set, else `cc`, else `gcc`); its
/// output or why there is none.
fn run(path: &Path, options: &Options) -> Result<String, String> {
    let set = options
        .cc
        .clone()
        .or_else(|| std::env::var("CC").ok())
        .filter(|c| !c.trim().is_empty());
    let candidates = match &set {
        Some(cc) => vec![cc.clone()],
        None => vec!["cc".to_string(), "gcc".to_string()],
    };
    let mut last = String::new();
    for cc in &candidates {
        // `$CC` may carry flags of its own (`gcc -m64`).
        let mut words = cc.split_whitespace();
        let program = words.next().unwrap_or("cc");
        let mut cmd = Command::new(program);
        cmd.args(words)
            .args(["-E", "-dD", "-std=gnu11"])
            .args(options.defines.iter().map(|d| format!("-D{d}")));
        for dir in &options.include_dirs {
            cmd.arg("-I").arg(dir);
        }
        cmd.args(&options.extra);
        cmd.arg(path);
        match cmd.output() {
            Ok(out) => return output_of(program, path, out),
            Err(e) => last = format!("cannot run the C preprocessor `{program}`: {e}"),
        }
    }
    Err(last)
}

/// The preprocessor's output, or what it said went wrong.
fn output_of(program: &str, path: &Path, out: std::process::Output) -> Result<String, String> {
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let first = said
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or("")
            .trim();
        return Err(format!(
            "`{program} -E` failed on {}: {first}",
            path.display()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Where the lines that follow a line marker come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The compiler's predefined macros.
    BuiltIn,
    /// A `-D` option.
    CommandLine,
    /// The translated file itself.
    File,
    /// A header found through `-I` or quotes: the program's own.
    UserHeader,
    /// A system header.
    SystemHeader,
}

/// Read `cc -E -dD` output for the file at `path`.
fn parse(text: &str, path: &Path) -> Env {
    let mut env = Env::default();
    let mut origin = Origin::BuiltIn;
    let main_name = path.to_string_lossy();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('#') else {
            if origin == Origin::UserHeader || origin == Origin::SystemHeader {
                env.headers.push_str(line);
                env.headers.push('\n');
            }
            continue;
        };
        let rest = rest.trim_start();
        if let Some(def) = rest.strip_prefix("define ") {
            env.macros.define_line(def);
            if matches!(
                origin,
                Origin::CommandLine | Origin::File | Origin::UserHeader
            ) {
                let name_len = def
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(def.len());
                env.user_macros.insert(def[..name_len].to_string());
            }
        } else if let Some(name) = rest.strip_prefix("undef ") {
            env.macros.undefine(name);
        } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
            // `# LINE "FILE" FLAGS`: flag 3 marks a system header.
            let Some(open) = rest.find('"') else { continue };
            let Some(close) = rest.rfind('"').filter(|c| *c > open) else {
                continue;
            };
            let file = &rest[open + 1..close];
            let system = rest[close + 1..].split_whitespace().any(|f| f == "3");
            origin = match file {
                "<built-in>" => Origin::BuiltIn,
                "<command-line>" => Origin::CommandLine,
                f if f == main_name => Origin::File,
                _ if system => Origin::SystemHeader,
                _ => Origin::UserHeader,
            };
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_origins_from_line_markers() {
        let text = "# 0 \"t.c\"\n# 0 \"<built-in>\"\n#define __GNUC__ 12\n# 0 \"<command-line>\"\n#define N 40\n\
                    # 1 \"/usr/include/stdio.h\" 1 3 4\n#define _STDIO_H 1\ntypedef long size_t;\n\
                    # 2 \"t.c\" 2\n# 1 \"inc/h.h\" 1\n#define DATA_TYPE double\ntypedef double real;\n\
                    # 3 \"t.c\" 2\n#define LOCAL 3\n#undef LOCAL\n#define LOCAL 4\nint main(void) { return 0; }\n";
        let env = parse(text, Path::new("t.c"));
        let names: Vec<&str> = env.user_macros.iter().map(String::as_str).collect();
        assert_eq!(names, ["DATA_TYPE", "LOCAL", "N"]);
        assert_eq!(env.macros.get("LOCAL").unwrap().body, "4");
        assert!(env.macros.contains("__GNUC__") && env.macros.contains("_STDIO_H"));
        assert!(env.headers.contains("typedef double real;"));
        assert!(env.headers.contains("size_t"));
        assert!(!env.headers.contains("main"));
    }

    #[test]
    fn falls_back_to_the_files_own_lines() {
        let opts = Options {
            defines: vec!["N=7".into()],
            ..Options::default()
        };
        let env = Env::of_file(
            Path::new("/nonexistent/tpace/t.c"),
            "#ifndef N\n#define N 3\n#endif\n",
            &opts,
        );
        assert!(env.fallback.is_some());
        assert_eq!(env.macros.get("N").unwrap().body, "7");
        assert!(env.user_macros.contains("N"));
    }
}
