//! The runtime follows the user's program in the host file, where the user's
//! macros are defined: a macro `n` or `lo` would rewrite the runtime's own
//! names. So every macro the program defines that is also a name in the
//! runtime is set aside (`#pragma push_macro`, `#undef`) before it and put
//! back (`#pragma pop_macro`) after it, and the code that follows the runtime
//! (a target's launchers, which need the user's macros) sees them again.

use crate::text::identifiers;
use std::collections::BTreeSet;

/// `body` with the user's macros that it names set aside around it.
pub fn wrap(user_macros: &[String], body: &str) -> String {
    let used: BTreeSet<&str> = identifiers(body).into_iter().collect();
    let clash: Vec<&str> = user_macros
        .iter()
        .map(String::as_str)
        .filter(|m| used.contains(m))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if clash.is_empty() {
        return body.to_string();
    }
    let list = clash
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = format!(
        "/* tpace: your macros {list} are also names in tpace's runtime: they are set aside\n \
         * while it is compiled and restored after it. */\n"
    );
    for m in &clash {
        out.push_str(&format!("#pragma push_macro(\"{m}\")\n#undef {m}\n"));
    }
    out.push_str(body);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for m in clash.iter().rev() {
        out.push_str(&format!("#pragma pop_macro(\"{m}\")\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn only_macros_the_runtime_names_are_set_aside() {
        let body = "long n = p->lo;\n";
        let out = wrap(&["n".into(), "X".into(), "lo".into()], body);
        assert!(out.contains("#pragma push_macro(\"n\")\n#undef n\n"));
        assert!(out.contains("#pragma push_macro(\"lo\")"));
        assert!(!out.contains("\"X\""));
        assert!(out.ends_with("#pragma pop_macro(\"n\")\n#pragma pop_macro(\"lo\")\n"));
        assert_eq!(wrap(&["X".into()], body), body);
    }
}
