//! The kernels' OpenCL C source as a C string in the host file. The OpenCL
//! compiler does not see the host's macros, so every piece of the user's text
//! in a kernel (a sweep's body, a type it names) goes through the host's own
//! preprocessor: it is written as `TPACE_CL_XSTR(text)`, which expands every
//! macro in it, object-like and function-like, with the values the host build
//! has (`-D` flags included) and makes a string of the result. tpace's own
//! text is plain string literals, which no macro touches.
//!
//! Writers build kernel text with the user's pieces between [`HOST_OPEN`]
//! and [`HOST_CLOSE`] ([`host`]); [`c_literal`] turns it into the C
//! initializer of the source string.

use crate::ir::Program;

/// Starts a piece of user text that the host preprocessor expands.
pub const HOST_OPEN: char = '\u{1}';
/// Ends it.
pub const HOST_CLOSE: char = '\u{2}';

/// `text` marked for expansion by the host preprocessor.
pub fn host(text: &str) -> String {
    format!("{HOST_OPEN}{text}{HOST_CLOSE}")
}

/// The C macros that stringify expanded text (defined before the source string).
pub const XSTR_MACROS: &str = "#define TPACE_CL_STR(...) #__VA_ARGS__\n\
                               #define TPACE_CL_XSTR(...) TPACE_CL_STR(__VA_ARGS__)\n";

/// A plain piece of kernel text as C string literals, one a line.
fn plain_literal(text: &str, out: &mut String) {
    for line in text.split_inclusive('\n') {
        out.push_str("    \"");
        for ch in line.chars() {
            match ch {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                ' '..='~' => out.push(ch),
                _ => out.push('?'),
            }
        }
        out.push_str("\"\n");
    }
}

/// The kernel text as the initializer of a C `char` array: plain parts as
/// string literals, user parts as `TPACE_CL_XSTR(...)`, concatenated.
pub fn c_literal(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find(HOST_OPEN) {
        plain_literal(&rest[..open], &mut out);
        let after = &rest[open + HOST_OPEN.len_utf8()..];
        let close = after.find(HOST_CLOSE).unwrap_or(after.len());
        // Line breaks in the user's text become spaces: the macro call is one line.
        let user: String = after[..close]
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        out.push_str(&format!("    TPACE_CL_XSTR({})\n", user.trim()));
        rest = after.get(close + HOST_CLOSE.len_utf8()..).unwrap_or("");
    }
    plain_literal(rest, &mut out);
    if out.is_empty() {
        out.push_str("    \"\"\n");
    }
    out
}

/// How a C scalar type as written travels into a kernel: the OpenCL C type of
/// the kernel's parameter or local (plain text, or the user's type through
/// the host preprocessor when it is not a built-in spelling), and the host's
/// type of the value set as the kernel argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalarType {
    /// The type in the kernel (may hold a [`host`] piece).
    pub device: String,
    /// The type on the host (`cl_int`, or the type as written).
    pub host: String,
}

/// The kernel's and the host's types for `written` (qualifiers dropped). C's
/// integer types become OpenCL's of the same width on an LP64 host (`long
/// long` and `size_t` are 64-bit `long` / `ulong`; OpenCL C has neither
/// spelling as a kernel argument); typedef names and macros are the user's.
pub fn scalar_type(written: &str) -> ScalarType {
    let words: Vec<&str> = written
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "const" | "volatile" | "register" | "static" | "restrict" | "extern" | "auto"
            )
        })
        .collect();
    let norm = words.join(" ");
    let known = |d: &str, h: &str| ScalarType {
        device: d.into(),
        host: h.into(),
    };
    match norm.as_str() {
        "float" => known("float", "cl_float"),
        "double" => known("double", "cl_double"),
        "char" | "signed char" | "int8_t" => known("char", "cl_char"),
        "unsigned char" | "uint8_t" => known("uchar", "cl_uchar"),
        "short" | "short int" | "signed short" | "signed short int" | "int16_t" => {
            known("short", "cl_short")
        }
        "unsigned short" | "unsigned short int" | "uint16_t" => known("ushort", "cl_ushort"),
        "int" | "signed" | "signed int" | "int32_t" | "_Bool" | "bool" => known("int", "cl_int"),
        "unsigned" | "unsigned int" | "uint32_t" => known("uint", "cl_uint"),
        "long"
        | "long int"
        | "signed long"
        | "signed long int"
        | "long long"
        | "long long int"
        | "signed long long"
        | "signed long long int"
        | "int64_t"
        | "ptrdiff_t"
        | "ssize_t"
        | "intptr_t" => known("long", "cl_long"),
        "unsigned long"
        | "unsigned long int"
        | "unsigned long long"
        | "unsigned long long int"
        | "uint64_t"
        | "size_t"
        | "uintptr_t" => known("ulong", "cl_ulong"),
        _ => ScalarType {
            device: host(&norm),
            host: norm,
        },
    }
}

/// The user's file-scope type declarations (typedefs, structs, enums) that the
/// kernel text `uses` names, and those they name in turn, in file order
/// (`lower::declarations::needed`, the program's own headers' too), each
/// marked for the host preprocessor. Preprocessor lines are left out: the host
/// expands macros itself.
pub fn declarations(program: &Program, uses: &str) -> String {
    crate::lower::declarations::needed(program, uses)
        .into_iter()
        .filter(|d| !d.is_directive())
        .map(|d| format!("{}\n", host(&d.text)))
        .collect()
}

/// A file-scope constant a called function reads, as OpenCL C needs it: in the
/// constant address space (`static` dropped).
pub fn constant(decl: &str) -> String {
    let words: Vec<&str> = decl.split_whitespace().filter(|w| *w != "static").collect();
    format!("__constant {}", words.join(" "))
}

/// The prototype of a function definition: its text up to the body's `{`.
pub fn prototype(definition: &str) -> String {
    let head = definition.split('{').next().unwrap_or(definition);
    format!("{};", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_pieces_go_through_the_host_preprocessor() {
        let text = format!("a \"q\" \\\n{}\nb\n", host("x[i] = C0 *\n y;"));
        let c = c_literal(&text);
        assert_eq!(
            c,
            "    \"a \\\"q\\\" \\\\\\n\"\n    TPACE_CL_XSTR(x[i] = C0 *  y;)\n    \"\\n\"\n    \"b\\n\"\n"
        );
    }

    #[test]
    fn scalar_types() {
        assert_eq!(scalar_type("const long long").device, "long");
        assert_eq!(scalar_type("size_t").host, "cl_ulong");
        assert_eq!(scalar_type("unsigned").device, "uint");
        let user = scalar_type("const real");
        assert_eq!(user.device, host("real"));
        assert_eq!(user.host, "real");
    }

    #[test]
    fn constants_and_prototypes_for_opencl_c() {
        assert_eq!(
            constant("static const float w = 0.6f;"),
            "__constant const float w = 0.6f;"
        );
        assert_eq!(
            prototype("static float f(float a, float b)\n{\n    return a;\n}"),
            "static float f(float a, float b);"
        );
    }
}
