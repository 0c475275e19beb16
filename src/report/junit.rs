//! `--format junit`: a run's report as JUnit XML, the format CI systems (GitLab, Jenkins,
//! GitHub's test reporters, Buildkite's test analytics) read. One `<testsuite>` per directory,
//! one `<testcase>` per scenario and per saved failure (regression file) in it; a case whose
//! expectation is not met has a `<failure>` whose text ends with its replay line. It is written
//! from the run's own JSON Lines (`run` and `merge` alike), read back through their types.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use super::json::{RegressionLine, RunLine, ScenarioLine, SummaryLine};
use crate::error::{Error, Result};

/// One test case.
struct Case {
    name: String,
    classname: String,
    /// `(message, text)` of its failure, if it failed.
    failure: Option<(String, String)>,
    /// Said in `<system-out>`: seeds and counts, a partial sweep.
    out: String,
}

/// The JUnit XML of a run's JSON Lines (`wakesim run --format json`, or `merge`'s output).
pub fn from_jsonl(text: &str) -> Result<String> {
    let mut suites: BTreeMap<String, Vec<Case>> = BTreeMap::new();
    let mut summary: Option<SummaryLine> = None;
    for (n, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line: RunLine = serde_json::from_str(l).map_err(|e| {
            Error::Usage(format!(
                "line {}: not a line of wakesim's JSON report: {e}",
                n + 1
            ))
        })?;
        match line {
            RunLine::Scenario(s) => {
                let case = scenario_case(&s);
                suites.entry(suite_of(&s.file)).or_default().push(case);
            }
            RunLine::Regression(r) => {
                let case = regression_case(&r);
                suites.entry(suite_of(&r.file)).or_default().push(case);
            }
            RunLine::Summary(s) => summary = Some(s),
        }
    }
    let summary = summary.ok_or_else(|| Error::Usage("no summary line".into()))?;
    let count = |cases: &[Case]| {
        (
            cases.len(),
            cases.iter().filter(|c| c.failure.is_some()).count(),
        )
    };
    let (tests, failures) = suites.values().fold((0, 0), |(t, f), cases| {
        let (ct, cf) = count(cases);
        (t + ct, f + cf)
    });
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"wakesim\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
        summary.seconds
    );
    for (name, cases) in &suites {
        let (t, f) = count(cases);
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{t}\" failures=\"{f}\" errors=\"0\" skipped=\"0\">",
            escape(name)
        );
        for c in cases {
            let _ = write!(
                x,
                "    <testcase name=\"{}\" classname=\"{}\">",
                escape(&c.name),
                escape(&c.classname)
            );
            if let Some((message, text)) = &c.failure {
                let _ = write!(
                    x,
                    "\n      <failure message=\"{}\" type=\"unmet\">{}</failure>",
                    escape(message),
                    escape(text)
                );
            }
            let _ = writeln!(
                x,
                "\n      <system-out>{}</system-out>\n    </testcase>",
                escape(&c.out)
            );
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    Ok(x)
}

/// A file's suite: its directory (`scenarios/pi`, `scenarios/pi/regressions`).
fn suite_of(file: &str) -> String {
    let dir = Path::new(file).parent().map(|p| p.display().to_string());
    dir.filter(|d| !d.is_empty()).unwrap_or_else(|| ".".into())
}

fn scenario_case(s: &ScenarioLine) -> Case {
    let [a, b] = s.seed_range;
    let mut out = format!(
        "{} · {} · {} seeds ({a}..{b}) · {} failing · expect {}",
        s.host, s.wake, s.seeds, s.failures, s.expect
    );
    if let Some(st) = &s.stopped {
        let _ = write!(out, "\npartial: {}", st.why);
    }
    let failure = (!s.met).then(|| {
        let why = s
            .why
            .clone()
            .unwrap_or_else(|| "expectation not met".into());
        let mut text = why.clone();
        if let Some(u) = &s.unexpected {
            let _ = write!(text, "\nreproduce: {}", u.reproduce);
        }
        (first_line(&why), text)
    });
    Case {
        name: s.name.clone(),
        classname: s.file.clone(),
        failure,
        out,
    }
}

fn regression_case(r: &RegressionLine) -> Case {
    let mut out = format!(
        "seed {} of {} · {}: {}",
        r.seed, r.scenario, r.outcome, r.detail
    );
    if let Some(why) = &r.stale {
        let _ = write!(out, "\nstale: {why}");
    }
    let failure = (!r.met).then(|| {
        let message = format!("expected {}, got {}", r.expect, r.outcome);
        let text = format!("{message}: {}\nreproduce: {}", r.detail, r.reproduce);
        (message, text)
    });
    Case {
        name: r.file.clone(),
        classname: r.scenario.clone(),
        failure,
        out,
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// Text as XML 1.0 character data or an attribute value: the five markup characters escaped,
/// and the control characters XML 1.0 cannot hold at all (an adapter's stderr may carry them)
/// written as U+FFFD.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(escape("x\u{1}y\u{1b}[0m"), "x\u{FFFD}y\u{FFFD}[0m");
        assert_eq!(escape("l1\nl2"), "l1&#10;l2");
    }
}
