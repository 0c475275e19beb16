//! Colour for people at a terminal: the ✓ and ✗ of `run`'s lines, and its warnings. `cmd`
//! decides whether to colour (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`, a terminal); the text
//! itself never changes, so output without colour is byte for byte what tools and tests read.

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// `text` with its marks and warnings coloured, line by line.
pub fn paint(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(rest) = trimmed.strip_prefix('✓') {
            out += &format!("{indent}{GREEN}✓{RESET}{rest}");
        } else if let Some(rest) = trimmed.strip_prefix('✗') {
            out += &format!("{indent}{RED}✗{RESET}{rest}");
        } else if trimmed.starts_with("warning:") || trimmed.starts_with("partial:") {
            out += &format!("{indent}{YELLOW}{trimmed}{RESET}");
        } else {
            out += line;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_warnings_are_coloured_and_nothing_else_changes() {
        let text = "✓ a · b\n✗ c\n  warning: thin\n  coverage: x";
        let painted = paint(text);
        assert_eq!(
            painted,
            "\x1b[32m✓\x1b[0m a · b\n\x1b[31m✗\x1b[0m c\n  \x1b[33mwarning: thin\x1b[0m\n  coverage: x"
        );
        let stripped = painted
            .replace(GREEN, "")
            .replace(RED, "")
            .replace(YELLOW, "")
            .replace(RESET, "");
        assert_eq!(stripped, text);
    }
}
