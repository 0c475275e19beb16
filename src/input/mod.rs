//! Reading checked input: deserializers that check values while they read them, so every
//! error in a scenario or regression file carries the span of the value at fault.

pub mod values;

use std::path::Path;

use crate::error::{Error, Result};
use crate::sim::Kernel;
use crate::sim::sink::Sink;

/// The file being read, for errors at file:line:column with the key.
#[derive(Clone, Copy)]
pub struct Cx<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

impl Cx<'_> {
    pub fn err(&self, span: std::ops::Range<usize>, message: String) -> Error {
        located(self.path, self.text, span, message)
    }

    /// An error about `key`, found after parsing: located at the key's first `key =`.
    pub fn key_err(&self, key: &str, message: String) -> Error {
        self.err(key_span(self.text, key), message)
    }

    /// A range whose `max` must stay within `0..=max` (a count, so a typo cannot ask for a run
    /// that never ends).
    pub fn at_most(&self, key: &str, span: Span, max: u64) -> Result<Span> {
        if span.max > max {
            return Err(self.key_err(key, format!("max {} is out of range 0..={max}", span.max)));
        }
        Ok(span)
    }

    pub fn toml(&self, e: toml::de::Error) -> Error {
        let span = e.span().unwrap_or(0..0);
        let message = e.message();
        // A key missing from the top level: toml spans the whole document, and the key on its
        // first line has nothing to do with it.
        if let Some(field) = message.strip_prefix("missing field ")
            && span.start == 0
            && (span.end == 0 || span.end >= self.text.trim_end().len())
        {
            return Error::Scenario {
                file: self.path.to_path_buf(),
                line: 1,
                column: 1,
                key: None,
                message: format!("missing top-level key {field}"),
            };
        }
        let mut err = self.err(span.clone(), message.to_string());
        // `seeds 10`: a key without `=` is named by the word it starts with.
        if let Error::Scenario {
            key: key @ None, ..
        } = &mut err
        {
            let start = span.start.min(self.text.len());
            let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
            let word = self.text[line_start..]
                .split(|c: char| c.is_whitespace() || c == '=')
                .find(|w| !w.is_empty())
                .filter(|w| !w.starts_with('[') && !w.starts_with('#'));
            *key = word.map(str::to_string);
        }
        err
    }
}

pub fn located(path: &Path, text: &str, span: std::ops::Range<usize>, message: String) -> Error {
    let start = span.start.min(text.len());
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..start].chars().count() + 1;
    Error::Scenario {
        file: path.to_path_buf(),
        line,
        column,
        key: key_at(text, start),
        message,
    }
}

/// The dotted key whose line holds `offset`: the `[table]` above it, then the key before `=`.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = &text[line_start..line_end];
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('#') && !k.starts_with('['));
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let header = line.trim();
    if key.is_none() && header.starts_with('[') {
        return Some(
            header
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string(),
        );
    }
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    }
}

/// The span of the first `key =` in the text, for errors found after parsing.
pub fn key_span(text: &str, key: &str) -> std::ops::Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(key) && trimmed[key.len()..].trim_start().starts_with('=') {
            let start = offset + (line.len() - trimmed.len());
            return start..start + key.len();
        }
        offset += line.len();
    }
    0..0
}

/// An inclusive range from a scenario file, `{ min = .., max = .. }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub min: u64,
    pub max: u64,
}

impl Span {
    pub const fn new(min: u64, max: u64) -> Span {
        Span { min, max }
    }

    /// A value in the range, biased toward its ends (and the wake logic's constants).
    pub fn delay<E, S: Sink>(self, k: &mut Kernel<E, S>, label: &'static str) -> u64 {
        k.delay(self.min, self.max, label)
    }

    /// When an outside event happens in the range (see `Choices::instant`).
    pub fn instant<E, S: Sink>(self, k: &mut Kernel<E, S>, label: &'static str) -> u64 {
        k.instant(self.min, self.max, label)
    }

    /// Lower the range's top to at most `max` (at least 1); the bottom follows if need be.
    pub fn cap(&mut self, max: u64) {
        self.max = self.max.min(max.max(1));
        self.min = self.min.min(self.max);
    }

    /// A count in the range, uniform.
    pub fn count<E, S: Sink>(self, k: &mut Kernel<E, S>, label: &'static str) -> u64 {
        self.min + k.choose(self.max - self.min + 1, label)
    }
}
