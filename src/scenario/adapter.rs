//! `wake` as a table: an external wake logic's adapter process (`docs/protocol.md`).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::adapter::AdapterSpec;
use crate::adapter::process::resolve_program;
use crate::error::{Error, Result};
use crate::limits::{
    ADAPTER_CONSTANTS_MAX as CONSTANTS_MAX,
    ADAPTER_START_TIMEOUT_MS_DEFAULT as START_TIMEOUT_MS_DEFAULT,
    ADAPTER_TIMEOUT_MS_DEFAULT as TIMEOUT_MS_DEFAULT, ADAPTER_TIMEOUT_MS_MAX as TIMEOUT_MS_MAX,
    DURATION_MS_MAX,
};

/// `wake`: a registered name, or a table naming an external adapter.
pub(super) enum WakeValue {
    Name(String),
    External(Box<RawExternal>),
}

impl<'de> Deserialize<'de> for WakeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WakeValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a wake logic's name or a table { command = [...] }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<WakeValue, E> {
                Ok(WakeValue::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<WakeValue, A::Error> {
                RawExternal::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|x| WakeValue::External(Box::new(x)))
            }
        }
        d.deserialize_any(V)
    }
}

/// `wake = { command = [...], cwd = "..", name = "..", constants_ms = [..], timeout_ms = n,
/// start_timeout_ms = n, options = { .. } }`: an adapter process speaking `docs/protocol.md`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExternal {
    command: Spanned<Vec<String>>,
    /// The adapter's working directory, relative to the scenario file's directory (default: that
    /// directory). The program and its arguments are taken relative to it.
    #[serde(default)]
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    constants_ms: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    start_timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    options: Option<toml::Table>,
}

/// Locates an error at a span of the file being read.
type Err<'a> = &'a dyn Fn(std::ops::Range<usize>, String) -> Error;

impl RawExternal {
    pub(super) fn validate(
        &self,
        path: &Path,
        origin: (PathBuf, usize, usize),
        err: Err<'_>,
    ) -> Result<AdapterSpec> {
        let command = self.command.get_ref().clone();
        let Some(program) = command.first() else {
            let message = "the command is empty: give the program and its arguments";
            return Err(err(self.command.span(), message.to_string()));
        };
        let cwd = self.cwd(path, err)?;
        self.program(program, &cwd, err)?;
        let timeout_ms = bound(&self.timeout_ms, TIMEOUT_MS_DEFAULT, err)?;
        let start_timeout_ms = bound(&self.start_timeout_ms, START_TIMEOUT_MS_DEFAULT, err)?;
        let constants_ms = match &self.constants_ms {
            Some(c) => {
                let v = c.get_ref();
                if v.len() > CONSTANTS_MAX || v.iter().any(|&ms| ms > DURATION_MS_MAX) {
                    let message = format!(
                        "at most {CONSTANTS_MAX} constants, each at most {DURATION_MS_MAX} ms"
                    );
                    return Err(err(c.span(), message));
                }
                v.clone()
            }
            None => Vec::new(),
        };
        let options = match &self.options {
            Some(t) => serde_json::to_value(t).unwrap_or_default(),
            None => serde_json::Value::Object(Default::default()),
        };
        Ok(AdapterSpec {
            command,
            cwd,
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            options,
            origin,
        })
    }

    /// The adapter's directory: `cwd` relative to the scenario file's directory (default: that
    /// directory). It must exist.
    fn cwd(&self, path: &Path, err: Err<'_>) -> Result<PathBuf> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Some(c) = &self.cwd else { return Ok(dir) };
        let cwd = dir.join(c.get_ref());
        if !cwd.is_dir() {
            return Err(err(
                c.span(),
                format!("`{}` is not a directory", cwd.display()),
            ));
        }
        Ok(cwd)
    }

    /// The command's program must be there: a path relative to `cwd`, or a name on `PATH`.
    fn program(&self, program: &str, cwd: &Path, err: Err<'_>) -> Result<()> {
        let span = self.command.span();
        if resolve_program(program, cwd).is_some() {
            return Ok(());
        }
        let where_ = if program.contains('/') {
            format!("in `{}`", cwd.display())
        } else {
            "on PATH".to_string()
        };
        Err(err(span, format!("program `{program}` not found {where_}")))
    }
}

/// A wall-clock bound in `1..=TIMEOUT_MS_MAX`, or its default.
fn bound(t: &Option<Spanned<u64>>, default: u64, err: Err<'_>) -> Result<u64> {
    let Some(t) = t else { return Ok(default) };
    let v = *t.get_ref();
    if v == 0 || v > TIMEOUT_MS_MAX {
        return Err(err(
            t.span(),
            format!("{v} is out of range 1..={TIMEOUT_MS_MAX}"),
        ));
    }
    Ok(v)
}
